//! Sealed receipt handles: what a client holds instead of the backend's handle.
//!
//! A handle is `base64(version | key id | nonce | AEAD(claims))`. The version and key id are
//! authenticated as associated data, so any altered byte fails to open. A keyring seals with its
//! first key and opens with any, so keys rotate without breaking handles in flight.
//!
//! Handles are sealed in the standard base64 alphabet, padded (`A-Za-z0-9+/=`), as AWS's own
//! are: SQS clients take that apart (amazon-sqs-extended-client recovers a handle with
//! `split('-')[-1]`, which a `-` of the URL-safe alphabet breaks). A dialect whose clients put
//! handles in URLs renders them in the URL-safe alphabet, unpadded ([`SealedHandle::url_safe`]),
//! as every handle was before; either spelling opens, so handles issued earlier keep working.
//!
//! Version 2 (sealed today) is AES-256-GCM-SIV with a 96-bit random nonce, under a key derived from
//! the receipt key; version 1 (sealed by earlier releases, still opened so handles in flight survive
//! an upgrade) is XChaCha20-Poly1305 with a 192-bit random nonce under the receipt key itself. The
//! change is for speed: on inputs as short as a handle's claims Poly1305's vector backend spends
//! most of its time setting up, and a receive and an ack of ten messages seal and open twenty
//! handles. Why: docs/decisions/2026-12-01-aes-gcm-siv-handles.md.

use aes_gcm_siv::Aes256GcmSiv;
use base64::Engine as _;
use base64::engine::general_purpose::URL_SAFE_NO_PAD;
use chacha20poly1305::aead::{AeadInPlace, KeyInit, OsRng};
use chacha20poly1305::{XChaCha20Poly1305, XNonce};
use chrono::{DateTime, TimeZone, Utc};
use zeroize::Zeroizing;

/// What each version of the wire form seals with.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Version {
    /// XChaCha20-Poly1305 under the receipt key (opened only).
    XChaCha = 1,
    /// AES-256-GCM-SIV under a key derived from the receipt key (sealed and opened).
    GcmSiv = 2,
}

impl Version {
    fn from_byte(byte: u8) -> Option<Self> {
        match byte {
            1 => Some(Self::XChaCha),
            2 => Some(Self::GcmSiv),
            _ => None,
        }
    }

    fn nonce_len(self) -> usize {
        match self {
            Self::XChaCha => 24,
            Self::GcmSiv => 12,
        }
    }
}

/// The version new handles are sealed in.
const SEALED_VERSION: Version = Version::GcmSiv;
/// What the version 2 key is derived with (HMAC-SHA256 of this label under the receipt key): one
/// key is never used by two algorithms.
const GCM_SIV_KEY_LABEL: &str = "sqs-gateway receipt handle v2 (AES-256-GCM-SIV)";
const HEADER_LEN: usize = 1 + 2;
const TAG_LEN: usize = 16;
/// Longer inputs are not handles; refuse them before decoding.
const MAX_ENCODED_LEN: usize = 8 * 1024;

/// What a sealed handle says, readable only by the gateway.
#[derive(Clone, PartialEq, Eq)]
pub struct HandleClaims {
    /// The gateway queue the delivery came from.
    pub queue: String,
    /// The message's id in the backend.
    pub message_id: String,
    /// The backend's own receipt handle for this delivery.
    pub backend_handle: String,
    /// The receive count of this delivery.
    pub delivery: u32,
    /// When the gateway started the receive that made this delivery.
    pub received_at: DateTime<Utc>,
    /// Random id of this delivery in the ledger.
    pub delivery_id: u64,
}

impl std::fmt::Debug for HandleClaims {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandleClaims")
            .field("queue", &self.queue)
            .field("message_id", &self.message_id)
            .field("backend_handle", &"<redacted>")
            .field("delivery", &self.delivery)
            .finish_non_exhaustive()
    }
}

/// Claims to seal, borrowed from where they already are: a receive seals one handle per message
/// without copying the strings it names.
#[derive(Clone, Copy)]
pub struct ClaimsToSeal<'a> {
    /// See [`HandleClaims::queue`].
    pub queue: &'a str,
    /// See [`HandleClaims::message_id`].
    pub message_id: &'a str,
    /// See [`HandleClaims::backend_handle`].
    pub backend_handle: &'a str,
    /// See [`HandleClaims::delivery`].
    pub delivery: u32,
    /// See [`HandleClaims::received_at`].
    pub received_at: DateTime<Utc>,
    /// See [`HandleClaims::delivery_id`].
    pub delivery_id: u64,
}

impl HandleClaims {
    /// These claims, to seal.
    pub fn to_seal(&self) -> ClaimsToSeal<'_> {
        ClaimsToSeal {
            queue: &self.queue,
            message_id: &self.message_id,
            backend_handle: &self.backend_handle,
            delivery: self.delivery,
            received_at: self.received_at,
            delivery_id: self.delivery_id,
        }
    }
}

/// A sealed handle as given to clients. Its `Debug` never shows the value.
#[derive(Clone, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(transparent)]
pub struct SealedHandle(String);

impl SealedHandle {
    /// The wire form, for response bodies only.
    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The same handle in the URL-safe alphabet, unpadded (`A-Za-z0-9-_`): what a dialect whose
    /// clients put handles in URLs gives out. It opens as the standard spelling does.
    pub fn url_safe(self) -> Self {
        if !self.0.contains(['+', '/', '=']) {
            return self;
        }
        Self(
            self.0
                .chars()
                .filter(|c| *c != '=')
                .map(|c| match c {
                    '+' => '-',
                    '/' => '_',
                    c => c,
                })
                .collect(),
        )
    }
}

impl std::fmt::Debug for SealedHandle {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealedHandle(<redacted>)")
    }
}

/// Why a string did not open as a handle. Deliberately carries no detail.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("not a valid receipt handle")]
pub struct InvalidHandle;

/// One receipt key's ciphers, one per wire version.
#[derive(Clone)]
struct Ciphers {
    xchacha: XChaCha20Poly1305,
    gcm_siv: Aes256GcmSiv,
}

/// The receipt-handle keys: seals with the first, opens with any. Read from their sources once;
/// each part that seals, opens or derives keys holds a copy.
#[derive(Clone)]
pub struct Keyring {
    keys: Vec<(u16, Ciphers)>,
    /// The keys' secrets, to derive other keys from (token signing); never shown.
    secrets: Vec<(u16, Zeroizing<Vec<u8>>)>,
}

impl std::fmt::Debug for Keyring {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let ids: Vec<u16> = self.keys.iter().map(|(id, _)| *id).collect();
        f.debug_struct("Keyring").field("key_ids", &ids).finish()
    }
}

/// A keyring could not be built.
#[derive(Debug, thiserror::Error)]
pub enum KeyringError {
    #[error("at least one receipt key is required")]
    /// No key at all.
    Empty,
    #[error("receipt key {0}: must be 32 bytes, base64-encoded")]
    /// A key that is not 32 bytes of base64.
    BadKey(u16),
    #[error("receipt key id {0} is listed twice")]
    /// Two keys with the same id.
    DuplicateId(u16),
}

impl Keyring {
    /// Builds a keyring from `(id, 32 secret bytes)` pairs; the first pair seals.
    pub fn new(keys: Vec<(u16, Zeroizing<Vec<u8>>)>) -> Result<Self, KeyringError> {
        if keys.is_empty() {
            return Err(KeyringError::Empty);
        }
        let mut built = Vec::with_capacity(keys.len());
        for (id, secret) in &keys {
            if built.iter().any(|(existing, _)| existing == id) {
                return Err(KeyringError::DuplicateId(*id));
            }
            let xchacha =
                XChaCha20Poly1305::new_from_slice(secret).map_err(|_| KeyringError::BadKey(*id))?;
            let derived = derive_key(secret, GCM_SIV_KEY_LABEL);
            let gcm_siv = Aes256GcmSiv::new_from_slice(&*derived)
                .expect("a derived key is 32 bytes, as AES-256 takes");
            built.push((*id, Ciphers { xchacha, gcm_siv }));
        }
        Ok(Self {
            keys: built,
            secrets: keys,
        })
    }

    /// Keys for another purpose, derived from each receipt key (HMAC-SHA256 of `label` under the
    /// key), in the ring's order and with its ids: they rotate with the receipt keys, and the
    /// receipt keys cannot be recovered from them.
    pub fn derive(&self, label: &str) -> Vec<(u16, Zeroizing<[u8; 32]>)> {
        self.secrets
            .iter()
            .map(|(id, secret)| (*id, derive_key(secret, label)))
            .collect()
    }

    /// Decodes a base64 key as written in the config.
    pub fn decode_key(id: u16, encoded: &str) -> Result<Zeroizing<Vec<u8>>, KeyringError> {
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encoded.trim())
            .or_else(|_| URL_SAFE_NO_PAD.decode(encoded.trim()))
            .map_err(|_| KeyringError::BadKey(id))?;
        if bytes.len() != 32 {
            return Err(KeyringError::BadKey(id));
        }
        Ok(Zeroizing::new(bytes))
    }

    /// A fresh random key, base64-encoded, for `sqs-gateway new-receipt-key`.
    pub fn generate_key() -> String {
        let key = XChaCha20Poly1305::generate_key(&mut OsRng);
        base64::engine::general_purpose::STANDARD.encode(key)
    }

    /// Seals claims under the newest key, in the current version (AES-256-GCM-SIV).
    ///
    /// The nonce comes from the thread's CSPRNG (ChaCha, seeded and reseeded from the OS): 96
    /// random bits per handle, without a system call each, drawn without coordination between
    /// replicas. GCM-SIV derives a fresh key from each nonce, and even a repeated nonce would
    /// only tell whether two sealed claims were equal (they never are: each carries a random
    /// 64-bit delivery id).
    pub fn seal(&self, claims: ClaimsToSeal<'_>) -> SealedHandle {
        let (key_id, ciphers) = &self.keys[0];
        let nonce_len = SEALED_VERSION.nonce_len();
        let body_start = HEADER_LEN + nonce_len;
        // One buffer: header, nonce, then the claims, encrypted where they are, and the tag.
        let mut raw = Zeroizing::new(Vec::with_capacity(
            body_start + claims_len(&claims) + TAG_LEN,
        ));
        raw.extend_from_slice(&header(SEALED_VERSION, *key_id));
        raw.resize(body_start, 0);
        rand::RngCore::fill_bytes(&mut rand::rng(), &mut raw[HEADER_LEN..]);
        encode_claims(&mut raw, &claims);
        let (head, body) = raw.split_at_mut(body_start);
        let (aad, nonce) = head.split_at(HEADER_LEN);
        let tag = ciphers
            .gcm_siv
            .encrypt_in_place_detached(aes_gcm_siv::Nonce::from_slice(nonce), aad, body)
            .expect("AES-256-GCM-SIV encryption of an in-memory buffer cannot fail");
        raw.extend_from_slice(&tag);
        SealedHandle(base64_simd::STANDARD.encode_to_string(&*raw))
    }

    /// Opens a handle sealed under any key of the ring, spelled in either alphabet (see the
    /// module's documentation).
    pub fn open(&self, handle: &str) -> Result<HandleClaims, InvalidHandle> {
        if handle.len() > MAX_ENCODED_LEN {
            return Err(InvalidHandle);
        }
        let mut raw = Zeroizing::new(decode(handle).ok_or(InvalidHandle)?);
        let version = raw
            .first()
            .copied()
            .and_then(Version::from_byte)
            .ok_or(InvalidHandle)?;
        let nonce_len = version.nonce_len();
        if raw.len() < HEADER_LEN + nonce_len + TAG_LEN {
            return Err(InvalidHandle);
        }
        let key_id = u16::from_be_bytes([raw[1], raw[2]]);
        let (_, ciphers) = self
            .keys
            .iter()
            .find(|(id, _)| *id == key_id)
            .ok_or(InvalidHandle)?;
        let (head, rest) = raw.split_at_mut(HEADER_LEN + nonce_len);
        let (body, tag) = rest.split_at_mut(rest.len() - TAG_LEN);
        let (aad, nonce) = head.split_at(HEADER_LEN);
        let opened = match version {
            Version::XChaCha => ciphers.xchacha.decrypt_in_place_detached(
                XNonce::from_slice(nonce),
                aad,
                body,
                chacha20poly1305::Tag::from_slice(tag),
            ),
            Version::GcmSiv => ciphers.gcm_siv.decrypt_in_place_detached(
                aes_gcm_siv::Nonce::from_slice(nonce),
                aad,
                body,
                aes_gcm_siv::Tag::from_slice(tag),
            ),
        };
        opened.map_err(|_| InvalidHandle)?;
        // `body` is the plaintext now, zeroed with `raw`.
        decode_claims(body).ok_or(InvalidHandle)
    }
}

/// Whether `text` has the shape of a sealed handle (its encoding, a known version, room for a
/// nonce and a tag), whatever its key and contents: text without that shape is no handle at all,
/// so an error may quote it back to its sender where a handle is never quoted.
pub fn shaped_like_a_handle(text: &str) -> bool {
    text.len() <= MAX_ENCODED_LEN
        && decode(text).is_some_and(|raw| {
            raw.first()
                .copied()
                .and_then(Version::from_byte)
                .is_some_and(|version| raw.len() >= HEADER_LEN + version.nonce_len() + TAG_LEN)
        })
}

/// A handle's bytes from its canonical spelling in the standard alphabet (padded) or the URL-safe
/// one (unpadded); a string in neither, or with unused bits set, is none.
fn decode(handle: &str) -> Option<Vec<u8>> {
    let alphabet = if handle.contains(['-', '_']) {
        base64_simd::URL_SAFE_NO_PAD
    } else if handle.contains(['+', '/', '=']) || handle.len().is_multiple_of(4) {
        base64_simd::STANDARD
    } else {
        // Letters and digits only, unpadded: URL-safe (the standard spelling would be padded).
        base64_simd::URL_SAFE_NO_PAD
    };
    alphabet.decode_to_vec(handle).ok()
}

fn header(version: Version, key_id: u16) -> [u8; HEADER_LEN] {
    let id = key_id.to_be_bytes();
    [version as u8, id[0], id[1]]
}

/// HMAC-SHA256 of `label` under `secret`: a key for another purpose, from which `secret` cannot
/// be recovered.
fn derive_key(secret: &[u8], label: &str) -> Zeroizing<[u8; 32]> {
    use hmac::{Hmac, Mac};
    let mut mac =
        <Hmac<sha2::Sha256> as Mac>::new_from_slice(secret).expect("HMAC takes keys of any length");
    mac.update(label.as_bytes());
    Zeroizing::new(mac.finalize().into_bytes().into())
}

/// The encoded claims' length.
fn claims_len(claims: &ClaimsToSeal<'_>) -> usize {
    3 * 4 + claims.queue.len() + claims.message_id.len() + claims.backend_handle.len() + 4 + 8 + 8
}

fn encode_claims(out: &mut Vec<u8>, claims: &ClaimsToSeal<'_>) {
    put_bytes(out, claims.queue.as_bytes());
    put_bytes(out, claims.message_id.as_bytes());
    put_bytes(out, claims.backend_handle.as_bytes());
    out.extend_from_slice(&claims.delivery.to_be_bytes());
    out.extend_from_slice(&claims.received_at.timestamp_millis().to_be_bytes());
    out.extend_from_slice(&claims.delivery_id.to_be_bytes());
}

fn put_bytes(out: &mut Vec<u8>, bytes: &[u8]) {
    let len = u32::try_from(bytes.len()).expect("handle fields are far below 4 GiB");
    out.extend_from_slice(&len.to_be_bytes());
    out.extend_from_slice(bytes);
}

/// Reads claims back; `None` on any inconsistency (only reachable with a valid tag, so a bug or a
/// handle from an incompatible build).
fn decode_claims(mut input: &[u8]) -> Option<HandleClaims> {
    let queue = take_string(&mut input)?;
    let message_id = take_string(&mut input)?;
    let backend_handle = take_string(&mut input)?;
    let delivery = u32::from_be_bytes(take_array(&mut input)?);
    let received_ms = i64::from_be_bytes(take_array(&mut input)?);
    let delivery_id = u64::from_be_bytes(take_array(&mut input)?);
    if !input.is_empty() {
        return None;
    }
    Some(HandleClaims {
        queue,
        message_id,
        backend_handle,
        delivery,
        received_at: Utc.timestamp_millis_opt(received_ms).single()?,
        delivery_id,
    })
}

fn take_array<const N: usize>(input: &mut &[u8]) -> Option<[u8; N]> {
    let (head, rest) = input.split_first_chunk::<N>()?;
    *input = rest;
    Some(*head)
}

fn take_string(input: &mut &[u8]) -> Option<String> {
    let len = u32::from_be_bytes(take_array(input)?) as usize;
    if input.len() < len {
        return None;
    }
    let (bytes, rest) = input.split_at(len);
    *input = rest;
    String::from_utf8(bytes.to_vec()).ok()
}

#[cfg(test)]
mod tests {
    use super::*;
    use base64::engine::general_purpose::STANDARD;

    fn key(byte: u8) -> Zeroizing<Vec<u8>> {
        Zeroizing::new(vec![byte; 32])
    }

    fn claims() -> HandleClaims {
        HandleClaims {
            queue: "orders".into(),
            message_id: "7d0c3f7e-1".into(),
            backend_handle: "AQEBbackend-handle+/=".into(),
            delivery: 3,
            received_at: Utc.timestamp_millis_opt(1_780_000_000_123).unwrap(),
            delivery_id: 0xdead_beef_0102_0304,
        }
    }

    #[test]
    fn seal_then_open_round_trips() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let sealed = ring.seal(claims().to_seal());
        assert_eq!(ring.open(sealed.expose()).unwrap(), claims());
    }

    #[test]
    fn the_handle_hides_the_backend_handle_and_differs_each_time() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let first = ring.seal(claims().to_seal());
        let second = ring.seal(claims().to_seal());
        assert_ne!(first, second, "a fresh nonce per seal");
        assert!(!first.expose().contains("backend-handle"));
        assert!(!format!("{first:?}").contains(first.expose()));
    }

    /// The bytes of a fresh handle of `claims()`.
    fn sealed_bytes(ring: &Keyring) -> Vec<u8> {
        STANDARD
            .decode(ring.seal(claims().to_seal()).expose())
            .unwrap()
    }

    /// Flips a bit of each byte of `raw` in turn: none of them opens, in either alphabet.
    fn assert_every_altered_byte_is_refused(ring: &Keyring, raw: &[u8]) {
        for index in 0..raw.len() {
            let mut altered = raw.to_vec();
            altered[index] ^= 0x01;
            for spelled in [STANDARD.encode(&altered), URL_SAFE_NO_PAD.encode(&altered)] {
                assert_eq!(ring.open(&spelled), Err(InvalidHandle), "byte {index}");
            }
        }
    }

    /// Handles are sealed in AWS's alphabet, padded; the URL-safe spelling of the same handle
    /// (what earlier releases sealed, and what URL-carrying dialects give out) opens too.
    #[test]
    fn handles_are_standard_base64_and_open_in_either_alphabet() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let mut saw_plus_or_slash = false;
        for _ in 0..100 {
            let sealed = ring.seal(claims().to_seal());
            let text = sealed.expose().to_owned();
            assert!(
                text.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'=')),
                "{text}"
            );
            assert_eq!(text.len() % 4, 0, "padded");
            saw_plus_or_slash |= text.contains(['+', '/']);
            let url_safe = sealed.url_safe();
            assert_eq!(
                url_safe.expose(),
                URL_SAFE_NO_PAD.encode(STANDARD.decode(&text).unwrap())
            );
            assert_eq!(ring.open(url_safe.expose()).unwrap(), claims());
            assert_eq!(ring.open(&text).unwrap(), claims());
            // One alphabet per spelling: both at once is neither.
            if text.contains('+') && text.contains('/') {
                let mixed = text.replacen('/', "_", 1).replace('=', "");
                assert_eq!(ring.open(&mixed), Err(InvalidHandle));
            }
        }
        assert!(saw_plus_or_slash);
    }

    /// One string per handle and alphabet: the unused low bits of the last character must be
    /// zero, so no third spelling of a handle opens (each would act as the same delivery).
    #[test]
    fn only_the_canonical_spelling_of_a_handle_opens() {
        const URL_SAFE: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_";
        const STANDARD_ALPHABET: &[u8] =
            b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let sealed = ring.seal(claims().to_seal());
        for (text, alphabet) in [
            (sealed.expose().to_owned(), STANDARD_ALPHABET),
            (sealed.clone().url_safe().expose().to_owned(), URL_SAFE),
        ] {
            let unpadded = text.trim_end_matches('=');
            assert_ne!(
                unpadded.len() % 4,
                0,
                "the test needs a handle with unused bits"
            );
            let end = unpadded.len() - 1;
            let last = alphabet.iter().position(|c| *c == text.as_bytes()[end]);
            let respelled = char::from(alphabet[last.unwrap() ^ 1]);
            let respelled = format!("{}{respelled}{}", &text[..end], &text[end + 1..]);
            assert_eq!(ring.open(&respelled), Err(InvalidHandle));
            assert!(ring.open(&text).is_ok());
        }
        // Padding is the standard spelling's: never more than it takes.
        assert_eq!(
            ring.open(&format!("{}=", sealed.expose())),
            Err(InvalidHandle)
        );
    }

    #[test]
    fn every_altered_byte_is_refused() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let raw = sealed_bytes(&ring);
        assert_every_altered_byte_is_refused(&ring, &raw);
        let mut truncated = raw.clone();
        truncated.pop();
        assert_eq!(ring.open(&STANDARD.encode(&truncated)), Err(InvalidHandle));
    }

    #[test]
    fn garbage_is_refused() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        for input in ["", "AQAAAH8…", "not base64 !", "AAAA", &"A".repeat(10_000)] {
            assert_eq!(ring.open(input), Err(InvalidHandle), "{input:.20}");
        }
    }

    #[test]
    fn a_handle_keeps_its_shape_when_altered_and_garbage_has_none() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let sealed = ring.seal(claims().to_seal());
        let mut altered = sealed.expose().to_owned();
        altered.replace_range(10..11, if &altered[10..11] == "A" { "B" } else { "A" });
        assert_eq!(ring.open(&altered), Err(InvalidHandle));
        for handle in [sealed.expose(), altered.as_str()] {
            assert!(shaped_like_a_handle(handle));
        }
        for garbage in ["garbage", "", "AAAA", "not base64 !", &"A".repeat(10_000)] {
            assert!(!shaped_like_a_handle(garbage), "{garbage:.20}");
        }
    }

    #[test]
    fn rotation_opens_old_handles_and_seals_with_the_newest_key() {
        let old = Keyring::new(vec![(1, key(7))]).unwrap();
        let old_handle = old.seal(claims().to_seal());
        let rotated = Keyring::new(vec![(2, key(9)), (1, key(7))]).unwrap();
        assert_eq!(rotated.open(old_handle.expose()).unwrap(), claims());
        let new_handle = rotated.seal(claims().to_seal());
        assert_eq!(old.open(new_handle.expose()), Err(InvalidHandle));
        let retired = Keyring::new(vec![(2, key(9))]).unwrap();
        assert_eq!(retired.open(old_handle.expose()), Err(InvalidHandle));
    }

    #[test]
    fn a_handle_from_another_key_with_the_same_id_is_refused() {
        let ours = Keyring::new(vec![(1, key(7))]).unwrap();
        let theirs = Keyring::new(vec![(1, key(8))]).unwrap();
        assert_eq!(
            ours.open(theirs.seal(claims().to_seal()).expose()),
            Err(InvalidHandle)
        );
    }

    #[test]
    fn keyring_checks_its_keys() {
        assert!(matches!(Keyring::new(vec![]), Err(KeyringError::Empty)));
        assert!(matches!(
            Keyring::new(vec![(1, Zeroizing::new(vec![0; 16]))]),
            Err(KeyringError::BadKey(1))
        ));
        assert!(matches!(
            Keyring::new(vec![(1, key(1)), (1, key(2))]),
            Err(KeyringError::DuplicateId(1))
        ));
        let generated = Keyring::generate_key();
        assert_eq!(Keyring::decode_key(4, &generated).unwrap().len(), 32);
        assert!(Keyring::decode_key(4, "c2hvcnQ=").is_err());
    }

    #[test]
    fn the_wire_form_is_header_nonce_then_aes_256_gcm_siv_under_a_derived_key() {
        use aes_gcm_siv::aead::{Aead, Payload};
        let ring = Keyring::new(vec![(5, key(7))]).unwrap();
        let raw = sealed_bytes(&ring);
        let mut expected = Vec::new();
        encode_claims(&mut expected, &claims().to_seal());
        assert_eq!(claims_len(&claims().to_seal()), expected.len());
        let nonce_len = 12;
        assert_eq!(raw[..HEADER_LEN], [2, 0, 5]);
        assert_eq!(raw.len(), HEADER_LEN + nonce_len + expected.len() + TAG_LEN);
        let derived = derive_key(&key(7), GCM_SIV_KEY_LABEL);
        let cipher = Aes256GcmSiv::new_from_slice(&*derived).unwrap();
        let opened = cipher
            .decrypt(
                aes_gcm_siv::Nonce::from_slice(&raw[HEADER_LEN..HEADER_LEN + nonce_len]),
                Payload {
                    msg: &raw[HEADER_LEN + nonce_len..],
                    aad: &[2, 0, 5],
                },
            )
            .unwrap();
        assert_eq!(opened, expected);
        // Not under the receipt key itself: each algorithm has a key of its own.
        let underived = Aes256GcmSiv::new_from_slice(&key(7)).unwrap();
        assert!(
            underived
                .decrypt(
                    aes_gcm_siv::Nonce::from_slice(&raw[HEADER_LEN..HEADER_LEN + nonce_len]),
                    Payload {
                        msg: &raw[HEADER_LEN + nonce_len..],
                        aad: &[2, 0, 5],
                    },
                )
                .is_err()
        );
    }

    /// A handle as earlier releases sealed it (version 1: XChaCha20-Poly1305 under the key).
    fn version_1_handle(key_id: u16, secret: &[u8], claims: &HandleClaims) -> String {
        use chacha20poly1305::aead::{Aead, Payload};
        let mut plain = Vec::new();
        encode_claims(&mut plain, &claims.to_seal());
        let nonce = [9u8; 24];
        let aad = header(Version::XChaCha, key_id);
        let sealed = XChaCha20Poly1305::new_from_slice(secret)
            .unwrap()
            .encrypt(
                XNonce::from_slice(&nonce),
                Payload {
                    msg: &plain,
                    aad: &aad,
                },
            )
            .unwrap();
        URL_SAFE_NO_PAD.encode([&aad[..], &nonce, &sealed].concat())
    }

    #[test]
    fn handles_of_earlier_releases_still_open_and_refuse_alteration() {
        let ring = Keyring::new(vec![(2, key(9)), (5, key(7))]).unwrap();
        let handle = version_1_handle(5, &key(7), &claims());
        assert_eq!(ring.open(&handle).unwrap(), claims());
        let raw = URL_SAFE_NO_PAD.decode(&handle).unwrap();
        assert_eq!(raw[0], 1);
        assert_every_altered_byte_is_refused(&ring, &raw);
        // A version 1 body relabelled as version 2 (and the reverse) does not open.
        let mut relabelled = raw.clone();
        relabelled[0] = 2;
        assert_eq!(
            ring.open(&URL_SAFE_NO_PAD.encode(&relabelled)),
            Err(InvalidHandle)
        );
        let mut current = sealed_bytes(&Keyring::new(vec![(5, key(7))]).unwrap());
        current[0] = 1;
        assert_eq!(ring.open(&STANDARD.encode(&current)), Err(InvalidHandle));
        // Under another key with the same id, it does not open either.
        let other = Keyring::new(vec![(5, key(8))]).unwrap();
        assert_eq!(other.open(&handle), Err(InvalidHandle));
    }

    #[test]
    fn unknown_versions_are_refused() {
        let ring = Keyring::new(vec![(1, key(7))]).unwrap();
        let mut raw = sealed_bytes(&ring);
        for version in [0u8, 3, 0xff] {
            raw[0] = version;
            assert_eq!(ring.open(&STANDARD.encode(&raw)), Err(InvalidHandle));
        }
    }
}
