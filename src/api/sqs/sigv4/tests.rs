//! Unit tests of `src/api/sqs/sigv4.rs`.

use super::super::regions::Regions;
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

    fn head(&self) -> RequestHead<'_> {
        let (method, uri, headers) = (&self.method, &self.uri, &self.headers);
        RequestHead {
            method,
            uri,
            headers,
        }
    }

    /// Verifies at the suite's date plus `minutes`, with `secret` for AKIDEXAMPLE.
    fn at(&self, service: &str, minutes: i64, secret: &str) -> Outcome {
        let date = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
        let now = date + TimeDelta::minutes(minutes);
        let secret_for =
            |key: &str| (key == "AKIDEXAMPLE").then(|| zeroize::Zeroizing::new(secret.to_owned()));
        let scope = Scope {
            service,
            regions: &Regions::new("us-east-1", &[]),
        };
        verify(&self.head(), &self.body, now, scope, secret_for)
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
    assert_eq!(
        vanilla.check("sqs"),
        Err(InvalidCredentialScope("wrong service"))
    );
    let elsewhere = vanilla.clone().with(
        "Authorization",
        &auth.replacen("/us-east-1/", "/eu-west-1/", 1),
    );
    assert_eq!(
        elsewhere.check("service"),
        Err(WrongRegion {
            expected: "'us-east-1'".into(),
            found: "eu-west-1".into()
        })
    );
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
    let good = Req::new("POST", "/1/./q%20x?b=%20&A=1", &sent, body).with("Authorization", &auth);
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
    ];
    for (case, req) in tampered.iter().enumerate() {
        assert_eq!(req.check("sqs"), Err(SignatureDoesNotMatch), "case {case}");
    }
    let unsigned_payload = good.clone().with("x-amz-content-sha256", UNSIGNED_PAYLOAD);
    assert_eq!(unsigned_payload.check("sqs"), Err(UnsignedPayload));
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
        "Action=GetQueueUrl&QueueName=orders&X-Amz-Algorithm=AWS4-HMAC-SHA256\
         &X-Amz-Credential={credential}&X-Amz-Date={DATE}&X-Amz-Expires=3600&X-Amz-SignedHeaders=host"
    );
    // As botocore's SigV4QueryAuth signs it (and AWS verifies it): the hash of the empty body.
    let empty = hex::encode(Sha256::digest(b""));
    let request = format!("POST\n/\n{query}\nhost:sqs.local\n\nhost\n{empty}");
    let target = format!("/?{query}&X-Amz-Signature={}", signature(&request));
    let host = [("host", "sqs.local")];
    let req = Req::new("POST", &target, &host, "");
    assert!(req.at("sqs", 59, SECRET).is_ok());
    assert_eq!(req.at("sqs", 61, SECRET), Err(RequestExpired));
    assert_eq!(req.at("sqs", -16, SECRET), Err(RequestExpired));
    let purge = Req::new(
        "POST",
        &target.replace("GetQueueUrl", "PurgeQueue"),
        &host,
        "",
    );
    assert_eq!(purge.check("sqs"), Err(SignatureDoesNotMatch));
    // The same URL cannot carry a body of another action, nor an unsigned JSON action.
    let form = [
        ("host", "sqs.local"),
        ("content-type", "application/x-www-form-urlencoded"),
    ];
    let repurposed = Req::new(
        "POST",
        &target,
        &form,
        "Action=DeleteQueue&QueueUrl=http://sqs.local/000000000000/orders",
    );
    assert_eq!(repurposed.check("sqs"), Err(SignatureDoesNotMatch));
    let json = req
        .clone()
        .with("X-Amz-Target", "AmazonSQS.ListQueues")
        .with("Content-Type", "application/x-amz-json-1.0");
    assert_eq!(json.check("sqs"), Err(UnsignedHeader("X-Amz-Target")));
    let unsigned_payload = req.clone().with("x-amz-content-sha256", UNSIGNED_PAYLOAD);
    assert_eq!(unsigned_payload.check("sqs"), Err(UnsignedPayload));
    // The URL as other tools presign it (UNSIGNED-PAYLOAD in the canonical request) is refused.
    let unsigned = format!("POST\n/\n{query}\nhost:sqs.local\n\nhost\n{UNSIGNED_PAYLOAD}");
    let target = format!("/?{query}&X-Amz-Signature={}", signature(&unsigned));
    let req_unsigned = Req::new("POST", &target, &host, "");
    assert_eq!(req_unsigned.check("sqs"), Err(SignatureDoesNotMatch));
    let both = req
        .clone()
        .with("Authorization", &sign("POST", "/", "", &host, ""));
    assert_eq!(
        both.check("sqs"),
        Err(IncompleteSignature("two authentication methods"))
    );
}

#[test]
fn headers_that_decide_the_meaning_must_be_signed() {
    let body = "{}";
    let json = [
        ("content-type", "application/x-amz-json-1.0"),
        ("host", "sqs.local"),
        ("x-amz-date", DATE),
        ("x-amz-target", "AmazonSQS.ListQueues"),
    ];
    let signed = sign("POST", "/", "", &json, body);
    let good = Req::new("POST", "/", &json, body).with("Authorization", &signed);
    assert!(good.check("sqs").is_ok());
    // Signed without the target, sent with one: the action is not what was signed.
    let no_target = [json[0], json[1], json[2]];
    let auth = sign("POST", "/", "", &no_target, body);
    let added = Req::new("POST", "/", &json, body).with("Authorization", &auth);
    assert_eq!(added.check("sqs"), Err(UnsignedHeader("X-Amz-Target")));
    // A JSON content type must be signed; the form encoding need not be (curl -d adds it
    // unsigned), since the payload hash covers the form itself.
    let bare = [json[1], json[2]];
    let auth = sign("POST", "/", "", &bare, "Action=ListQueues");
    let typed = Req::new("POST", "/", &bare, "Action=ListQueues").with("Authorization", &auth);
    let as_json = typed
        .clone()
        .with("Content-Type", "application/x-amz-json-1.0");
    assert_eq!(as_json.check("sqs"), Err(UnsignedHeader("Content-Type")));
    let as_form = typed.with(
        "Content-Type",
        "application/x-www-form-urlencoded; charset=utf-8",
    );
    assert!(as_form.check("sqs").is_ok());
}

#[test]
fn the_head_is_judged_before_any_body_is_read() {
    let headers = [("host", "sqs.local"), ("x-amz-date", DATE)];
    let auth = sign("POST", "/", "", &headers, "Action=ListQueues");
    let req = Req::new("POST", "/", &headers, "").with("Authorization", &auth);
    let now = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
    let scope = Scope {
        service: "sqs",
        regions: &Regions::new("us-east-1", &[]),
    };
    let unknown = check_head(&req.head(), now, scope, &SigningKeys::default(), |_| None);
    assert_eq!(unknown.unwrap_err(), UnknownKey);
    let known = |_: &str| Some(zeroize::Zeroizing::new(SECRET.to_owned()));
    let pending = check_head(&req.head(), now, scope, &SigningKeys::default(), known).unwrap();
    assert_eq!(pending.access_key_id(), "AKIDEXAMPLE");
    assert!(pending.verify(b"Action=ListQueues").is_ok());
    let pending = check_head(&req.head(), now, scope, &SigningKeys::default(), known).unwrap();
    assert_eq!(
        pending.verify(b"Action=DeleteQueue"),
        Err(SignatureDoesNotMatch)
    );
}

#[test]
fn a_days_signing_key_is_derived_once_and_still_checks_every_signature() {
    let headers = [("host", "sqs.local"), ("x-amz-date", DATE)];
    let auth = sign("POST", "/", "", &headers, "Action=ListQueues");
    let req = Req::new("POST", "/", &headers, "").with("Authorization", &auth);
    let now = Utc.with_ymd_and_hms(2015, 8, 30, 12, 36, 0).unwrap();
    let scope = Scope {
        service: "sqs",
        regions: &Regions::new("us-east-1", &[]),
    };
    let keys = SigningKeys::default();
    let lookups = std::cell::Cell::new(0);
    let secret_for = |_: &str| {
        lookups.set(lookups.get() + 1);
        Some(zeroize::Zeroizing::new(SECRET.to_owned()))
    };
    for _ in 0..3 {
        let pending = check_head(&req.head(), now, scope, &keys, secret_for).unwrap();
        assert!(pending.verify(b"Action=ListQueues").is_ok());
    }
    assert_eq!(lookups.get(), 1, "derived once");
    let pending = check_head(&req.head(), now, scope, &keys, secret_for).unwrap();
    assert_eq!(
        pending.verify(b"Action=PurgeQueue"),
        Err(SignatureDoesNotMatch)
    );
    assert!(
        check_head(&req.head(), now, scope, &keys, |_| None).is_ok(),
        "a cached key answers without its secret"
    );
}
