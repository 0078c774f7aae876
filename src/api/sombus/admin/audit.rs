//! The admin route of a workspace's audit log: a page of it, newest first, with the cursor of
//! the next and what the page found damaged.

use super::*;

/// The audit route's `limit` and `cursor`.
fn audit_query(query: Option<&str>) -> Result<(usize, Option<u64>), SombusError> {
    let bad = |message: &str| refusal(StatusCode::BAD_REQUEST, admin_rule::BAD_REQUEST, message);
    let (mut limit, mut cursor) = (None, None);
    for (name, value) in form_urlencoded::parse(query.unwrap_or_default().as_bytes()) {
        match name.as_ref() {
            "limit" if limit.is_none() => {
                let value = value.parse::<usize>().ok();
                limit = Some(
                    value
                        .filter(|value| (1..=AUDIT_MAX).contains(value))
                        .ok_or_else(|| bad("limit must be 1 to 1000"))?,
                );
            }
            "cursor" if cursor.is_none() => {
                // As documented: 1 to 19 digits (every such number is a u64), nothing else.
                let digits = (1..=19).contains(&value.len())
                    && value.bytes().all(|byte| byte.is_ascii_digit());
                let value = digits.then(|| value.parse::<u64>().ok()).flatten();
                cursor = Some(
                    value.ok_or_else(|| bad("cursor must be a next_cursor this audit log gave"))?,
                );
            }
            "limit" | "cursor" => return Err(bad("limit and cursor may be given once each")),
            _ => return Err(bad("the query parameters are limit (1 to 1000) and cursor")),
        }
    }
    Ok((limit.unwrap_or(AUDIT_DEFAULT), cursor))
}

#[utoipa::path(
    get,
    path = "/v1/admin/workspaces/{workspace}/audit",
    operation_id = "auditLog",
    tag = "admin",
    summary = "The workspace's audit log",
    description = "Every change to the workspace's connections and credentials, and every admin \
        request refused with 401 or 403 (`outcome: refused`; at most 30 a minute one by one, the \
        rest summed in an `admin.refusals` entry), viewer role or above; newest first, a page at a \
        time: at most `limit` entries (100 by default, 1000 at most); `next_cursor`, present while \
        older entries may follow, is the `cursor` of the next page; `damage`, present when the \
        part of the log the page read has lines damaged, missing or altered.",
    params(wire::WorkspacePath, wire::AuditQuery),
    security(("admin_key" = [])),
    responses(
        (status = 200, description = "A page of entries, newest first.", body = wire::AuditPage),
        crate::api::sombus::wire::AdminRefusals,
    )
)]
pub(super) async fn audit(
    State(state): State<Arc<SombusState>>,
    path: Result<Path<String>, PathRejection>,
    headers: HeaderMap,
    RawQuery(query): RawQuery,
) -> Result<Json<AuditPage>, SombusError> {
    let Path(workspace) = path.map_err(path_error)?;
    state.admin_for(&headers, &workspace, AdminRole::Viewer, "audit.read", "")?;
    let (limit, cursor) = audit_query(query.as_deref())?;
    // A minute of refusals that is over is summed before the page is read.
    state.record_refusal_sums().await;
    let page = state
        .check
        .store()
        .audit(&workspace, limit, cursor)
        .await
        .map_err(crate::api::sombus::connections::store_error)?;
    if !page.damage.is_none() {
        tracing::warn!(damage = ?page.damage, "the sombus audit log has damaged or missing lines");
    }
    Ok(Json(AuditPage::new(page)))
}
