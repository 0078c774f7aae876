//! Verifies AWS Signature Version 4, so stock SQS clients (boto3, aws-cli, SDKs) can authenticate.

use axum::http::{HeaderMap, Method, Uri};
use chrono::{DateTime, NaiveDateTime, Utc};
use hmac::{Hmac, Mac};
use sha2::{Digest, Sha256};
use subtle::ConstantTimeEq;

const ALGORITHM: &str = "AWS4-HMAC-SHA256";
const UNSIGNED_PAYLOAD: &str = "UNSIGNED-PAYLOAD";
const AMZ_DATE: &str = "%Y%m%dT%H%M%SZ";
/// How far the request time may be from the server clock, in seconds.
const MAX_SKEW_SECS: i64 = 15 * 60;
/// The longest lifetime AWS allows a presigned URL (seven days), in seconds.
const MAX_EXPIRES_SECS: i64 = 7 * 24 * 60 * 60;

/// The parts of an incoming HTTP request that a SigV4 signature covers.
pub struct SignedRequest<'a> {
    /// The request method.
    pub method: &'a Method,
    /// The request target as received (use axum's `OriginalUri` if the router is nested).
    pub uri: &'a Uri,
    /// All request headers.
    pub headers: &'a HeaderMap,
    /// The complete request body.
    pub body: &'a [u8],
}

/// The identity that a valid signature proves.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Verified {
    /// The access key id from the credential scope.
    pub access_key_id: String,
    /// The region from the credential scope; not checked here.
    pub region: String,
}

/// Why a request failed verification; no variant carries a secret, signature or header value.
#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum SigV4Error {
    /// Neither an `Authorization` header nor presigned query parameters are present.
    #[error("the request carries no AWS Signature Version 4 authentication")]
    MissingAuthentication,
    /// The authentication data is malformed or lacks a required part.
    #[error("incomplete signature: {0}")]
    IncompleteSignature(&'static str),
    /// The credential scope names the wrong service or date.
    #[error("invalid credential scope: {0}")]
    InvalidCredentialScope(&'static str),
    /// The access key id is not known.
    #[error("the access key id is not known")]
    UnknownKey,
    /// The signature does not match the request.
    #[error("the request signature does not match")]
    SignatureDoesNotMatch,
    /// The request time is too far from the server clock, or the presigned URL has expired.
    #[error("the request time is outside the allowed window")]
    RequestExpired,
    /// The `x-amz-content-sha256` header does not match the body.
    #[error("x-amz-content-sha256 does not match the request body")]
    InvalidPayloadHash,
}

impl SigV4Error {
    /// The AWS error code to report for this failure.
    pub fn aws_code(&self) -> &'static str {
        match self {
            Self::MissingAuthentication => "MissingAuthenticationToken",
            Self::IncompleteSignature(_) => "IncompleteSignature",
            Self::UnknownKey => "InvalidClientTokenId",
            Self::RequestExpired => "RequestExpired",
            Self::InvalidCredentialScope(_)
            | Self::SignatureDoesNotMatch
            | Self::InvalidPayloadHash => "SignatureDoesNotMatch",
        }
    }
}

/// Verifies a request signed for service `sqs`, by `Authorization` header or presigned URL.
/// `now` is the server time; `secret_for` maps an access key id to its secret access key.
pub fn verify(
    request: &SignedRequest<'_>,
    now: DateTime<Utc>,
    secret_for: impl Fn(&str) -> Option<String>,
) -> Result<Verified, SigV4Error> {
    verify_for_service(request, now, secret_for, "sqs")
}

/// The authentication data, from the `Authorization` header or the presigned query.
struct Auth {
    credential: String,
    signed_headers: String,
    signature: String,
    /// For presigned URLs: `X-Amz-Date` and `X-Amz-Expires`.
    presigned: Option<(String, i64)>,
}

fn verify_for_service(
    request: &SignedRequest<'_>,
    now: DateTime<Utc>,
    secret_for: impl Fn(&str) -> Option<String>,
    service: &str,
) -> Result<Verified, SigV4Error> {
    use SigV4Error::*;
    let query = parse_query(request.uri.query().unwrap_or(""));
    let auth = parse_auth(request.headers, &query)?;
    let presigned = auth.presigned.is_some();
    let parts: Vec<&str> = auth.credential.split('/').collect();
    let &[key_id, scope_date, region, scope_service, "aws4_request"] = parts.as_slice() else {
        return Err(IncompleteSignature("malformed Credential"));
    };
    if scope_service != service {
        return Err(InvalidCredentialScope("wrong service"));
    }
    let signed_headers: Vec<&str> = auth.signed_headers.split(';').collect();
    if !signed_headers.contains(&"host") {
        return Err(IncompleteSignature("host must be signed"));
    }
    let (amz_date, time) = request_time(request.headers, auth.presigned.as_ref())?;
    if scope_date != &amz_date[..8] {
        return Err(InvalidCredentialScope("wrong date"));
    }
    let age = (now - time).num_seconds();
    let expired = match auth.presigned {
        Some((_, expires)) => age > expires || age < -MAX_SKEW_SECS,
        None => age.abs() > MAX_SKEW_SECS,
    };
    if expired {
        return Err(RequestExpired);
    }
    let secret = secret_for(key_id).ok_or(UnknownKey)?;
    let canonical_request = format!(
        "{}\n{}\n{}\n{}\n{}\n{}",
        request.method.as_str(),
        canonical_uri(request.uri.path()),
        canonical_query(&query, presigned),
        canonical_headers(request, &signed_headers)?,
        auth.signed_headers,
        payload_hash(request, presigned)?,
    );
    let scope = format!("{scope_date}/{region}/{service}/aws4_request");
    let digest = hex::encode(Sha256::digest(canonical_request.as_bytes()));
    let string_to_sign = format!("{ALGORITHM}\n{amz_date}\n{scope}\n{digest}");
    let signing_key = [scope_date, region, service, "aws4_request"]
        .into_iter()
        .fold(format!("AWS4{secret}").into_bytes(), |key, part| {
            hmac_sha256(&key, part)
        });
    let expected = hmac_sha256(&signing_key, &string_to_sign);
    let given = hex::decode(&auth.signature).map_err(|_| SignatureDoesNotMatch)?;
    if !bool::from(expected.as_slice().ct_eq(given.as_slice())) {
        return Err(SignatureDoesNotMatch);
    }
    let (access_key_id, region) = (key_id.to_owned(), region.to_owned());
    Ok(Verified {
        access_key_id,
        region,
    })
}

fn hmac_sha256(key: &[u8], data: &str) -> Vec<u8> {
    let mut mac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes keys of any length");
    mac.update(data.as_bytes());
    mac.finalize().into_bytes().to_vec()
}

/// The single value of header `name`, if any; a repeated or non-text value is refused.
fn header<'h>(headers: &'h HeaderMap, name: &str) -> Result<Option<&'h str>, SigV4Error> {
    let mut values = headers.get_all(name).iter();
    match (values.next(), values.next()) {
        (None, _) => Ok(None),
        (Some(value), None) => Ok(Some(value.to_str().map_err(|_| bad_header())?)),
        (Some(_), Some(_)) => Err(bad_header()),
    }
}

fn bad_header() -> SigV4Error {
    SigV4Error::IncompleteSignature("repeated or non-text header")
}

fn parse_auth(headers: &HeaderMap, query: &[(Vec<u8>, Vec<u8>)]) -> Result<Auth, SigV4Error> {
    use SigV4Error::*;
    let param = |name: &str| {
        let found = query.iter().find(|(key, _)| key == name.as_bytes());
        found.map(|(_, value)| String::from_utf8_lossy(value).into_owned())
    };
    let need = |name: &str| param(name).ok_or(IncompleteSignature("presigned URL lacks a part"));
    match (header(headers, "authorization")?, param("X-Amz-Algorithm")) {
        (Some(_), Some(_)) => Err(IncompleteSignature("two authentication methods")),
        (None, None) => Err(MissingAuthentication),
        (Some(value), None) => parse_authorization(value),
        (None, Some(algorithm)) if algorithm != ALGORITHM => {
            Err(IncompleteSignature("unsupported algorithm"))
        }
        (None, Some(_)) => {
            let expires = need("X-Amz-Expires")?.parse::<i64>().ok();
            let expires = expires.filter(|expires| (1..=MAX_EXPIRES_SECS).contains(expires));
            let expires = expires.ok_or(IncompleteSignature("bad X-Amz-Expires"))?;
            Ok(Auth {
                credential: need("X-Amz-Credential")?,
                signed_headers: need("X-Amz-SignedHeaders")?,
                signature: need("X-Amz-Signature")?,
                presigned: Some((need("X-Amz-Date")?, expires)),
            })
        }
    }
}

/// Parses `AWS4-HMAC-SHA256 Credential=.., SignedHeaders=.., Signature=..`.
fn parse_authorization(value: &str) -> Result<Auth, SigV4Error> {
    use SigV4Error::IncompleteSignature;
    let rest = value
        .strip_prefix(ALGORITHM)
        .filter(|rest| rest.starts_with(' '));
    let rest = rest.ok_or(IncompleteSignature("unsupported algorithm"))?;
    let (mut credential, mut signed_headers, mut signature) = (None, None, None);
    for part in rest.split(',') {
        let (name, value) = part
            .trim()
            .split_once('=')
            .ok_or(IncompleteSignature("malformed Authorization"))?;
        let slot = match name {
            "Credential" => &mut credential,
            "SignedHeaders" => &mut signed_headers,
            "Signature" => &mut signature,
            _ => return Err(IncompleteSignature("unknown component")),
        };
        if slot.replace(value.to_owned()).is_some() {
            return Err(IncompleteSignature("repeated component"));
        }
    }
    match (credential, signed_headers, signature) {
        (Some(credential), Some(signed_headers), Some(signature)) => Ok(Auth {
            credential,
            signed_headers,
            signature,
            presigned: None,
        }),
        _ => Err(IncompleteSignature("missing component")),
    }
}

/// The request time, formatted for the string to sign and parsed: the presigned `X-Amz-Date`,
/// else the `X-Amz-Date` header, else the `Date` header (RFC 1123).
fn request_time(
    headers: &HeaderMap,
    presigned: Option<&(String, i64)>,
) -> Result<(String, DateTime<Utc>), SigV4Error> {
    let amz = |value: &str| {
        let time = NaiveDateTime::parse_from_str(value, AMZ_DATE).ok();
        time.filter(|_| value.len() == 16)
            .map(|time| time.and_utc())
    };
    let time = if let Some((value, _)) = presigned {
        amz(value.as_str())
    } else if let Some(value) = header(headers, "x-amz-date")? {
        amz(value)
    } else if let Some(value) = header(headers, "date")? {
        let time = DateTime::parse_from_rfc2822(value).ok();
        time.map(|time| time.with_timezone(&Utc))
    } else {
        None
    };
    let time = time.ok_or(SigV4Error::IncompleteSignature("missing or bad date"))?;
    Ok((time.format(AMZ_DATE).to_string(), time))
}

/// The hashed payload: checks `x-amz-content-sha256` against the body when it is present.
fn payload_hash(request: &SignedRequest<'_>, presigned: bool) -> Result<String, SigV4Error> {
    match header(request.headers, "x-amz-content-sha256")? {
        Some(UNSIGNED_PAYLOAD) => Ok(UNSIGNED_PAYLOAD.to_owned()),
        None if presigned => Ok(UNSIGNED_PAYLOAD.to_owned()),
        claimed => {
            let actual = hex::encode(Sha256::digest(request.body));
            match claimed {
                Some(claimed) if claimed != actual => Err(SigV4Error::InvalidPayloadHash),
                _ => Ok(actual),
            }
        }
    }
}

/// One `name:value\n` line per signed header: values trimmed, inner whitespace runs collapsed to
/// one space, repeated headers joined with `,`. HTTP/2 carries the host in the URI authority.
fn canonical_headers(request: &SignedRequest<'_>, signed: &[&str]) -> Result<String, SigV4Error> {
    let mut out = String::new();
    for &name in signed {
        let values = request.headers.get_all(name).iter().map(|value| {
            let text = String::from_utf8_lossy(value.as_bytes());
            text.split_ascii_whitespace().collect::<Vec<_>>().join(" ")
        });
        let mut values: Vec<String> = values.collect();
        if values.is_empty() && name == "host" {
            values.extend(request.uri.authority().map(|host| host.as_str().to_owned()));
        }
        if values.is_empty() {
            return Err(SigV4Error::IncompleteSignature("signed header missing"));
        }
        out.push_str(&format!("{name}:{}\n", values.join(",")));
    }
    Ok(out)
}

/// The path as sent, with empty and dot segments removed, and each segment URI-encoded again
/// (so `%20` becomes `%2520`), as AWS SDKs do for every service but S3.
fn canonical_uri(path: &str) -> String {
    let mut segments: Vec<String> = Vec::new();
    for segment in path.split('/') {
        match segment {
            "" | "." => {}
            ".." => {
                segments.pop();
            }
            segment => segments.push(uri_encode(segment.as_bytes())),
        }
    }
    let trailing = ["/", "/.", "/.."].iter().any(|end| path.ends_with(end));
    let slash = if trailing && !segments.is_empty() {
        "/"
    } else {
        ""
    };
    format!("/{}{slash}", segments.join("/"))
}

/// Names and values decoded, re-encoded, sorted; presigned URLs leave out `X-Amz-Signature`.
fn canonical_query(query: &[(Vec<u8>, Vec<u8>)], presigned: bool) -> String {
    let pairs = query
        .iter()
        .filter(|(name, _)| !presigned || name != b"X-Amz-Signature");
    let mut pairs: Vec<_> = pairs
        .map(|(name, value)| (uri_encode(name), uri_encode(value)))
        .collect();
    pairs.sort();
    let pairs: Vec<String> = pairs
        .iter()
        .map(|(name, value)| format!("{name}={value}"))
        .collect();
    pairs.join("&")
}

/// Splits a raw query string into percent-decoded (name, value) pairs; `+` stays `+`.
fn parse_query(raw: &str) -> Vec<(Vec<u8>, Vec<u8>)> {
    let pairs = raw.split('&').filter(|pair| !pair.is_empty());
    let pairs = pairs.map(|pair| pair.split_once('=').unwrap_or((pair, "")));
    pairs
        .map(|(name, value)| (percent_decode(name), percent_decode(value)))
        .collect()
}

fn percent_decode(text: &str) -> Vec<u8> {
    let (bytes, mut out, mut i) = (text.as_bytes(), Vec::new(), 0);
    while i < bytes.len() {
        let decoded = match bytes.get(i..i + 3) {
            Some([b'%', hi, lo]) => hex::decode([*hi, *lo]).ok(),
            _ => None,
        };
        if let Some(byte) = decoded {
            out.extend(byte);
            i += 3;
        } else {
            out.push(bytes[i]);
            i += 1;
        }
    }
    out
}

/// Percent-encodes every byte outside the unreserved set `A-Z a-z 0-9 - _ . ~`.
fn uri_encode(bytes: &[u8]) -> String {
    let mut out = String::with_capacity(bytes.len());
    for &byte in bytes {
        if byte.is_ascii_alphanumeric() || b"-_.~".contains(&byte) {
            out.push(char::from(byte));
        } else {
            out.push_str(&format!("%{byte:02X}"));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use SigV4Error::*;
    use axum::http::{HeaderName, HeaderValue};
    use chrono::{TimeDelta, TimeZone};

    const SECRET: &str = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY";
    const DATE: &str = "20150830T123600Z";
    const VANILLA: &str = "5fa00fa31553b73ebf1942676e86291e8372ff2a2260956d9b8aae1d763fbf31";

    type Outcome = Result<Verified, SigV4Error>;

    #[derive(Clone)]
    struct Req {
        method: Method,
        uri: Uri,
        headers: HeaderMap,
        body: Vec<u8>,
    }

    impl Req {
        fn new(method: &str, target: &str, headers: &[(&str, &str)], body: &str) -> Self {
            let mut map = HeaderMap::new();
            for (name, value) in headers {
                let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
                map.append(name, HeaderValue::from_str(value).unwrap());
            }
            let (method, uri) = (method.parse().unwrap(), target.parse().unwrap());
            let body = body.into();
            Self {
                method,
                uri,
                headers: map,
                body,
            }
        }

        fn with(mut self, name: &str, value: &str) -> Self {
            let name = HeaderName::from_bytes(name.as_bytes()).unwrap();
            let value = HeaderValue::from_str(value).unwrap();
            self.headers.insert(name, value);
            self
        }

        fn as_signed(&self) -> SignedRequest<'_> {
            let (method, uri, headers, body) = (&self.method, &self.uri, &self.headers, &self.body);
            SignedRequest {
                method,
                uri,
                headers,
                body,
            }
        }

        /// Verifies at the suite's date plus `minutes`, with `secret` for AKIDEXAMPLE.
        fn at(&self, service: &str, minutes: i64, secret: &str) -> Outcome {
            let date = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
            let now = date + TimeDelta::minutes(minutes);
            let secret_for = |key: &str| (key == "AKIDEXAMPLE").then(|| secret.to_owned());
            verify_for_service(&self.as_signed(), now, secret_for, service)
        }

        fn check(&self, service: &str) -> Outcome {
            self.at(service, 0, SECRET)
        }
    }

    fn suite_auth(signed_headers: &str, signature: &str) -> String {
        let credential = "AKIDEXAMPLE/20150830/us-east-1/service/aws4_request";
        let rest = format!("SignedHeaders={signed_headers}, Signature={signature}");
        format!("AWS4-HMAC-SHA256 Credential={credential}, {rest}")
    }

    /// Vectors from the published aws-sig-v4-test-suite (service "service").
    #[test]
    fn aws_test_suite_vectors() {
        let host = ("Host", "example.amazonaws.com");
        let form = ("Content-Type", "application/x-www-form-urlencoded");
        let cases = [
            // get-vanilla, post-vanilla, get-vanilla-query-order-key-case
            ("GET", "/", "", VANILLA),
            (
                "POST",
                "/",
                "",
                "5da7c1a2acd57cee7505fc6676e4e544621c30862966e37dddb68e92efbe5d6b",
            ),
            (
                "GET",
                "/?Param2=value2&Param1=value1",
                "",
                "b97d918cfa904a5beff61c982a1b6f458b799221646efd99d3219ec94cdf2500",
            ),
            // post-x-www-form-urlencoded (the only case with a body, so it also signs content-type)
            (
                "POST",
                "/",
                "Param1=value1",
                "ff11897932ad3f4e8b18135d722051e5ac45fc38421b1da7b9d196a0fe09473a",
            ),
            // get-relative-relative, get-slash-dot-slash, get-slash: they normalise to "/"
            ("GET", "/example1/example2/../..", "", VANILLA),
            ("GET", "/./", "", VANILLA),
            ("GET", "//", "", VANILLA),
        ];
        for (method, target, body, signature) in cases {
            let (headers, signed) = match body {
                "" => (vec![host, ("X-Amz-Date", DATE)], "host;x-amz-date"),
                _ => (
                    vec![form, host, ("X-Amz-Date", DATE)],
                    "content-type;host;x-amz-date",
                ),
            };
            let auth = suite_auth(signed, signature);
            let req = Req::new(method, target, &headers, body).with("Authorization", &auth);
            let verified = req
                .check("service")
                .unwrap_or_else(|e| panic!("{method} {target}: {e}"));
            assert_eq!(verified.access_key_id, "AKIDEXAMPLE");
            assert_eq!(verified.region, "us-east-1");
        }
    }

    #[test]
    fn rejections() {
        let headers = [("Host", "example.amazonaws.com"), ("X-Amz-Date", DATE)];
        let auth = suite_auth("host;x-amz-date", VANILLA);
        let vanilla = Req::new("GET", "/", &headers, "").with("Authorization", &auth);
        assert!(vanilla.at("service", 14, SECRET).is_ok());
        assert!(vanilla.at("service", -14, SECRET).is_ok());
        assert_eq!(vanilla.at("service", 16, SECRET), Err(RequestExpired));
        assert_eq!(vanilla.at("service", -16, SECRET), Err(RequestExpired));
        assert_eq!(
            vanilla.at("service", 0, "wrong"),
            Err(SignatureDoesNotMatch)
        );
        let wrong_signature = VANILLA.replace('5', "6");
        let edits = [
            ("AKIDEXAMPLE", "AKIDOTHER", UnknownKey),
            ("/service/", "/s3/", InvalidCredentialScope("wrong service")),
            (
                "/20150830/",
                "/20150831/",
                InvalidCredentialScope("wrong date"),
            ),
            ("host;", "", IncompleteSignature("host must be signed")),
            (
                ", Signature=",
                ", Sig=",
                IncompleteSignature("unknown component"),
            ),
            (
                "AWS4-HMAC",
                "AWS3-HMAC",
                IncompleteSignature("unsupported algorithm"),
            ),
            (VANILLA, wrong_signature.as_str(), SignatureDoesNotMatch),
        ];
        for (from, to, error) in edits {
            let edited = vanilla
                .clone()
                .with("Authorization", &auth.replacen(from, to, 1));
            assert_eq!(edited.check("service"), Err(error), "{from} -> {to}");
        }
        let sqs = verify(&vanilla.as_signed(), Utc::now(), |_| Some(SECRET.into()));
        assert_eq!(sqs, Err(InvalidCredentialScope("wrong service")));
        let unsigned = Req::new("GET", "/", &headers, "");
        assert_eq!(unsigned.check("service"), Err(MissingAuthentication));
        // An unsigned x-amz-content-sha256 must still match the (empty) body.
        let zeros = "0".repeat(64);
        let claimed = vanilla.clone().with("x-amz-content-sha256", &zeros);
        assert_eq!(claimed.check("service"), Err(InvalidPayloadHash));
        let empty = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855";
        let claimed = vanilla.clone().with("x-amz-content-sha256", empty);
        assert!(claimed.check("service").is_ok());
        let shown = format!("{SignatureDoesNotMatch:?} {SignatureDoesNotMatch}");
        assert!(!shown.contains(VANILLA) && !shown.contains(SECRET));
    }

    fn mac(key: &[u8], data: &str) -> Vec<u8> {
        let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap();
        mac.update(data.as_bytes());
        mac.finalize().into_bytes().to_vec()
    }

    /// An independent, deliberately naive signature for service "sqs" at `DATE`.
    fn signature(canonical_request: &str) -> String {
        let scope = "20150830/us-east-1/sqs/aws4_request";
        let digest = hex::encode(Sha256::digest(canonical_request.as_bytes()));
        let mut key = format!("AWS4{SECRET}").into_bytes();
        for part in ["20150830", "us-east-1", "sqs", "aws4_request"] {
            key = mac(&key, part);
        }
        let string_to_sign = format!("AWS4-HMAC-SHA256\n{DATE}\n{scope}\n{digest}");
        hex::encode(mac(&key, &string_to_sign))
    }

    /// An Authorization header; the caller gives the canonical URI, query and (sorted) headers.
    fn sign(method: &str, uri: &str, query: &str, headers: &[(&str, &str)], body: &str) -> String {
        let names: Vec<&str> = headers.iter().map(|(name, _)| *name).collect();
        let names = names.join(";");
        let lines: String = headers
            .iter()
            .map(|(name, value)| format!("{name}:{value}\n"))
            .collect();
        let payload = hex::encode(Sha256::digest(body.as_bytes()));
        let request = format!("{method}\n{uri}\n{query}\n{lines}\n{names}\n{payload}");
        let signature = signature(&request);
        // Uneven spacing after the commas on purpose: clients differ.
        let credential = "AKIDEXAMPLE/20150830/us-east-1/sqs/aws4_request";
        let rest = format!("SignedHeaders={names},Signature={signature}");
        format!("AWS4-HMAC-SHA256 Credential={credential},  {rest}")
    }

    #[test]
    fn round_trip_and_tampering() {
        let body = "Action=SendMessage&MessageBody=hello";
        let form = "application/x-www-form-urlencoded; charset=utf-8";
        let signed = [
            ("content-type", form),
            ("host", "sqs.local:9324"),
            ("x-amz-date", DATE),
            ("x-custom", "a b,c"),
        ];
        let auth = sign("POST", "/1/q%2520x", "A=1&b=%20", &signed, body);
        let sent = [
            (
                "Content-Type",
                "  application/x-www-form-urlencoded;   charset=utf-8 ",
            ),
            ("Host", "sqs.local:9324"),
            ("X-Amz-Date", DATE),
            ("X-Custom", "a  b"),
            ("X-Custom", "c"),
            ("User-Agent", "not signed"),
        ];
        let good =
            Req::new("POST", "/1/./q%20x?b=%20&A=1", &sent, body).with("Authorization", &auth);
        assert_eq!(good.check("sqs").unwrap().access_key_id, "AKIDEXAMPLE");
        let body_hash = hex::encode(Sha256::digest(body.as_bytes()));
        let harmless = [
            good.clone().with("User-Agent", "other"),
            good.clone().with("X-Custom", "a b,c"),
            good.clone().with("x-amz-content-sha256", &body_hash),
        ];
        for req in harmless {
            assert!(req.check("sqs").is_ok());
        }
        let edit = |change: fn(&mut Req)| {
            let mut req = good.clone();
            change(&mut req);
            req
        };
        let tampered = [
            edit(|req| req.method = Method::PUT),
            edit(|req| req.uri = "/1/q%20y?b=%20&A=1".parse().unwrap()),
            edit(|req| req.uri = "/1/q%20x?b=%20&A=2".parse().unwrap()),
            edit(|req| req.uri = "/1/q%20x?b=%20&A=1&c=".parse().unwrap()),
            edit(|req| req.body.push(b'!')),
            good.clone().with("Host", "sqs.local:9325"),
            good.clone().with("X-Custom", "a b"),
            good.clone().with("X-Amz-Date", "20150830T123601Z"),
            good.clone().with("x-amz-content-sha256", UNSIGNED_PAYLOAD),
        ];
        for (case, req) in tampered.iter().enumerate() {
            assert_eq!(req.check("sqs"), Err(SignatureDoesNotMatch), "case {case}");
        }
        // Without X-Amz-Date, the Date header (RFC 1123) gives the request time.
        let headers = [
            ("date", "Sun, 30 Aug 2015 12:36:00 GMT"),
            ("host", "sqs.local"),
        ];
        let auth = sign("GET", "/", "", &headers, "");
        let dated = Req::new("GET", "/", &headers, "").with("Authorization", &auth);
        assert!(dated.check("sqs").is_ok());
    }

    #[test]
    fn presigned_url() {
        let credential = "AKIDEXAMPLE%2F20150830%2Fus-east-1%2Fsqs%2Faws4_request";
        let query = format!(
            "Action=ListQueues&X-Amz-Algorithm=AWS4-HMAC-SHA256&X-Amz-Credential={credential}\
             &X-Amz-Date={DATE}&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
        );
        let request = format!("GET\n/\n{query}\nhost:sqs.local\n\nhost\n{UNSIGNED_PAYLOAD}");
        let target = format!("/?{query}&X-Amz-Signature={}", signature(&request));
        let host = [("host", "sqs.local")];
        let req = Req::new("GET", &target, &host, "");
        assert!(req.at("sqs", 59, SECRET).is_ok());
        assert_eq!(req.at("sqs", 61, SECRET), Err(RequestExpired));
        assert_eq!(req.at("sqs", -16, SECRET), Err(RequestExpired));
        let purge = Req::new(
            "GET",
            &target.replace("ListQueues", "PurgeQueue"),
            &host,
            "",
        );
        assert_eq!(purge.check("sqs"), Err(SignatureDoesNotMatch));
        let both = req
            .clone()
            .with("Authorization", &sign("GET", "/", "", &host, ""));
        assert_eq!(
            both.check("sqs"),
            Err(IncompleteSignature("two authentication methods"))
        );
    }
}
