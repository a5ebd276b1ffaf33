//! An OAuth issuer for the `front-oauth` mode: its metadata and its key
//! set served over HTTP on loopback (what mcp-chain's front fetches once),
//! and an RS256 access token for the load's requests. The key is a test
//! key made for this benchmark and published here; it signs nothing else.

use crate::Result;
use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;

/// The test key (PKCS #8), and its public modulus for the key set.
const PRIVATE_PEM: &str = "
-----BEGIN PRIVATE KEY-----
MIIEvgIBADANBgkqhkiG9w0BAQEFAASCBKgwggSkAgEAAoIBAQC2vYeX9PrEx0E0
Dc2gzDgtOJCV3os/BQ+C8eLGV2BJsx4oLrsCd5deHlL6RTqjmAYrGBLuyoMamHdM
Z2NUABF+9tfxb1z4udFkU5NT5LGt3XqU1BhIog1+M798dlOPuE45SCn8nuzSI+FO
5GZW1Z0iqZP59s1i0uIskAPnrFmLyrB7tm01N1wdUouWsRfqsqoebPFYooDigXGD
gpEm23sTdDe8QIfv8Ok6Dtf9L7s4zbBnmcxXh+k7PxuMhoo+JHeLvBWgQn4TjLRK
+RkJP4yiEjMH8+DXTdkVFAXTm6XxmqbUy1O/V0AnkyPC3RVwqyMyRDUI9pLoyX5g
JFtf2drpAgMBAAECggEAOB8G6H0dEpfbB4CBuTNewUyQ4uYAv67vL5jXu3AUKy4u
QcrwNfbCbu5DL4dZVeqXYl63Wcyp7N4MLVPHJoIK3YIzmXtJAz4V94jPQ0GF686M
Ge71MkFKgYqk8TVpvkatB1yJQIMSWgsY4+CzKVHbO0z3HBpWw1Xeji8AdALzUUG+
QwzO+QTXuRYkSo3xlWd1e4KPLGHdHww+lTkaCBrhMEeDx65aL7K6BXFuFEX4z9Zd
oIQ+t2bqWnBtGIRvpH4kiWBhiM2jY/8Nh0A9lI15p9nLobwUF0vWb/vfFtXppzDM
4fRZKFhZLkptUrCYWsLbwqbL9JGnBFU2tCM+6NXDrQKBgQDnF6HsMR7mNP0R9J7K
QntlgX57Uaa0BrkoghlNHUZ/ar0os78+8ke4pfwZSAtRcUDQZmQQVYJ7KHHl0XWd
UDx+SzN/R8GMB3SB2a6Siqx+3qOgHK14i+up5H3xPUroRW15JhG7zP7mq+78re8J
96csaUym6uUqweAcpWpcG9J8twKBgQDKb8FlbiAbrZ+mHbmSfTluhfXEEr+X/F1I
cJ6U4NSm258IBb5GiRCWhVnwyXeIRRl+MgCkMHN62g0awQMPO+c5C48ZxW3Tdk6k
MxJSO9X+EFBfT3SUlz3wGstVvSJsiQcIVEnNguFKdBQJM+o6fb6Ma5nLQRBHtJaX
gHkdoCIFXwKBgQDH/BihuQSffh2/yy0bphr5he36NHgKdYMI/kV9Cae3npyiO6N2
it7seaBIFKPO0C6h6uoPhKCNiju/AdxBzmz7coLXVDa3wr/dm49Ku/15MZzyc77f
gl7oQJeJDFzl0ydg30QbfNTetM32F2O1AX/HnDy8eqzlqrASukfn/B/U0wKBgQCU
3OOJtBbWY7Hv1RH+oClYlhfpTKQpnsH2ICLtdfvKi9wBaT/H3Mke9wbxoyVMRwv9
GcYQ9zQkVi6myuJ2FGXvNAnSOLWPeANSid/iKvAs+VAxFluzXRiF9R4reX7T81wB
iwIOpz0GpB+LuOp4grlZx1J7/ed741eOJ0JpP7Vk3wKBgHd2bz6iTzD8JvU8qr2q
DNvJ7WMaIUWbyUpYrRXtaDFIg651CIuM5fVL+GFMQ/MM7eGXRMHWo47GxauNcwoW
DpfCyqnP7TetBOSt5HXd/ZI3e+PCt4VAPLAfExwYaL3FrJ63kmca2+zfTP7d9FIj
3UQNA3NskcxIoDie+HlZRynJ
-----END PRIVATE KEY-----
";
const MODULUS: &str = "tr2Hl_T6xMdBNA3NoMw4LTiQld6LPwUPgvHixldgSbMeKC67AneXXh5S-kU6o5gGKxgS7sqDGph3TGdjVAARfvbX8W9c-LnRZFOTU-Sxrd16lNQYSKINfjO_fHZTj7hOOUgp_J7s0iPhTuRmVtWdIqmT-fbNYtLiLJAD56xZi8qwe7ZtNTdcHVKLlrEX6rKqHmzxWKKA4oFxg4KRJtt7E3Q3vECH7_DpOg7X_S-7OM2wZ5nMV4fpOz8bjIaKPiR3i7wVoEJ-E4y0SvkZCT-MohIzB_Pg103ZFRQF05ul8Zqm1MtTv1dAJ5Mjwt0VcKsjMkQ1CPaS6Ml-YCRbX9na6Q";

/// The issuer, listening until the process ends.
pub(crate) struct Issuer {
    pub(crate) url: String,
}

impl Issuer {
    pub(crate) fn start() -> Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let url = format!("http://{}", listener.local_addr()?);
        let metadata = format!(
            r#"{{"issuer":"{url}","jwks_uri":"{url}/jwks","response_types_supported":["code"]}}"#
        );
        let jwks = format!(
            r#"{{"keys":[{{"kty":"RSA","kid":"bench","alg":"RS256","use":"sig","n":"{MODULUS}","e":"AQAB"}}]}}"#
        );
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let mut reader = BufReader::new(stream);
                let mut first = String::new();
                if reader.read_line(&mut first).is_err() {
                    continue;
                }
                // The rest of the head, unread otherwise.
                let mut line = String::new();
                while reader.read_line(&mut line).is_ok_and(|n| n > 2) {
                    line.clear();
                }
                let body = if first.contains("/jwks") {
                    &jwks
                } else if first.contains("/.well-known/oauth-authorization-server") {
                    &metadata
                } else {
                    "{}"
                };
                let status = if body == "{}" {
                    "404 Not Found"
                } else {
                    "200 OK"
                };
                let answer = format!(
                    "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                    body.len()
                );
                let _ = reader.get_mut().write_all(answer.as_bytes());
            }
        });
        Ok(Self { url })
    }

    /// An access token for `audience`, valid for an hour.
    pub(crate) fn token(&self, audience: &str) -> Result<String> {
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)?
            .as_secs();
        let claims = serde_json::json!({
            "iss": self.url, "sub": "bench", "aud": audience,
            "scope": "mcp:read", "iat": now, "exp": now + 3600,
        });
        let mut header = jsonwebtoken::Header::new(jsonwebtoken::Algorithm::RS256);
        header.kid = Some("bench".into());
        let key = jsonwebtoken::EncodingKey::from_rsa_pem(PRIVATE_PEM.trim().as_bytes())?;
        Ok(jsonwebtoken::encode(&header, &claims, &key)?)
    }
}
