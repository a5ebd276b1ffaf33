//! The console behind a sign-in (`[console] client_id`, with
//! `[front.oauth]`): before any page, a person signs in at the front's
//! authorization server, and the console lets in only one whose access
//! token the front itself would accept (its issuer, its audience, its
//! required scopes) and that holds `mcp-chain:admin`.
//!
//! The console's address is then `public_url` itself, stable across
//! restarts (the secret path is where it sends a person signed in). A
//! page asked for without a sign-in sends the browser to the
//! authorization endpoint (authorization code, PKCE S256, a state drawn
//! for it, `resource` the front's audience); the person comes back at
//! `public_url` + `callback` (the redirect URI registered at the issuer),
//! where the state is taken (once), `iss` checked, the code traded and the
//! token checked. The person then holds a cookie (a random 128-bit value,
//! `HttpOnly`, `SameSite=Lax`, `Secure` on https) good until the token
//! expires, at most [`SIGNED_IN_AT_MOST`]; the token itself is dropped. The forms keep
//! their own checks (origin, the page's token): the cookie alone decides
//! nothing. Sign-ins under way and people signed in are both bounded.

use super::page::{plain, text, Body};
use crate::config::{FrontOAuth, SignInConfig, ADMIN_SCOPE};
use crate::front::resource::ResourceServer;
use crate::oauth::person::SignIn;
use hyper::header::{HeaderMap, HeaderValue, COOKIE, LOCATION, SET_COOKIE};
use hyper::{Response, StatusCode};
use oauth2::PkceCodeVerifier;
use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};
use url::Url;

const COOKIE_NAME: &str = "mcp-chain-console";
/// The longest a sign-in lasts, whatever the token says.
const SIGNED_IN_AT_MOST: Duration = Duration::from_secs(8 * 3600);
/// How long a person has to come back from the authorization server.
const COME_BACK_WITHIN: Duration = Duration::from_secs(600);
/// Sign-ins under way, and people signed in, kept at most.
const PENDING_AT_MOST: usize = 64;
const PEOPLE_AT_MOST: usize = 256;

pub(super) struct Gate {
    sign_in: SignIn,
    tokens: ResourceServer,
    pending: Mutex<HashMap<String, (PkceCodeVerifier, Instant)>>,
    people: Mutex<HashMap<String, (String, Instant)>>,
    cookie_path: String,
    /// Where a person signed in is sent: the pages, at the secret path.
    landing: String,
    secure: bool,
}

impl Gate {
    pub(super) fn new(
        config: &SignInConfig,
        oauth: &FrontOAuth,
        secret: &str,
    ) -> Result<Self, String> {
        let public = &config.public_url;
        let joined = |path: &str| {
            public
                .join(path)
                .map_err(|e| format!("console.public_url: {e}"))
        };
        let callback = joined("callback")?;
        let landing = joined(&format!("{secret}/"))?.to_string();
        let resource = Url::parse(&oauth.audience)
            .map_err(|e| format!("front.oauth.audience is not a URL to ask a token for: {e}"))?;
        let mut scopes = vec![ADMIN_SCOPE.to_owned()];
        scopes.extend(oauth.required_scopes.iter().cloned());
        scopes.dedup();
        let sign_in = SignIn::new(
            oauth.issuer.clone(),
            config.client_id.clone(),
            callback.to_string(),
            resource,
            scopes,
        )
        .map_err(|e| format!("console: {e}"))?;
        let tokens = ResourceServer::new(oauth.clone()).map_err(|e| format!("console: {e}"))?;
        Ok(Self {
            sign_in,
            tokens,
            pending: Mutex::new(HashMap::new()),
            people: Mutex::new(HashMap::new()),
            cookie_path: public.path().to_owned(),
            landing,
            secure: public.scheme() == "https",
        })
    }

    /// Who holds this request's cookie, while their sign-in lasts.
    pub(super) fn person(&self, headers: &HeaderMap) -> Option<String> {
        let cookie = cookie(headers)?;
        let mut people = lock(&self.people);
        let (subject, until) = people.get(cookie)?;
        if *until <= Instant::now() {
            people.remove(cookie);
            return None;
        }
        Some(subject.clone())
    }

    /// Sends the browser to sign in.
    pub(super) async fn begin(&self) -> Response<Body> {
        let started = match self.sign_in.start().await {
            Ok(started) => started,
            Err(e) => {
                tracing::warn!(error = %e, "console: no sign-in at the front's authorization server");
                return plain(
                    StatusCode::BAD_GATEWAY,
                    "the authorization server cannot be reached to sign in; see mcp-chain's log",
                );
            }
        };
        {
            let mut pending = lock(&self.pending);
            let now = Instant::now();
            pending.retain(|_, (_, at)| now.duration_since(*at) < COME_BACK_WITHIN);
            if pending.len() >= PENDING_AT_MOST {
                return plain(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "too many sign-ins under way; try again in a few minutes",
                );
            }
            pending.insert(started.state, (started.verifier, now));
        }
        let mut response = text(StatusCode::SEE_OTHER, "sign in");
        if let Ok(location) = HeaderValue::from_str(started.url.as_str()) {
            response.headers_mut().insert(LOCATION, location);
        }
        response
    }

    /// The person back from the authorization server.
    pub(super) async fn callback(&self, query: Option<&str>) -> Response<Body> {
        let fields: HashMap<String, String> =
            url::form_urlencoded::parse(query.unwrap_or("").as_bytes())
                .into_owned()
                .collect();
        let taken = fields
            .get("state")
            .and_then(|state| lock(&self.pending).remove(state));
        let Some((verifier, at)) = taken else {
            return plain(
                StatusCode::BAD_REQUEST,
                "this sign-in was not started here, or is used already: open the console again",
            );
        };
        if at.elapsed() >= COME_BACK_WITHIN {
            return plain(
                StatusCode::BAD_REQUEST,
                "this sign-in took too long: open the console again",
            );
        }
        let Some(code) = fields.get("code") else {
            return plain(
                StatusCode::FORBIDDEN,
                "the authorization server did not sign you in",
            );
        };
        let tokens = match self
            .sign_in
            .finish(
                code.clone(),
                fields.get("iss").map(String::as_str),
                verifier,
            )
            .await
        {
            Ok(tokens) => tokens,
            Err(e) => {
                tracing::warn!(error = %e, "console: a sign-in failed");
                return plain(
                    StatusCode::FORBIDDEN,
                    "the sign-in failed; see mcp-chain's log",
                );
            }
        };
        let principal = match self.tokens.check(&tokens.access_token).await {
            Ok(principal) => principal,
            Err(why) => {
                tracing::warn!(
                    ?why,
                    "console: a sign-in's token is not one the front accepts"
                );
                return plain(
                    StatusCode::FORBIDDEN,
                    "your token is not one this mcp-chain accepts",
                );
            }
        };
        if !principal.has_scopes(&[ADMIN_SCOPE.to_owned()]) {
            tracing::warn!(subject = %principal.subject, "console: signed in without the scope mcp-chain:admin; refused");
            return plain(
                StatusCode::FORBIDDEN,
                "the console needs the scope mcp-chain:admin, and your token does not hold it",
            );
        }
        let Some(value) = super::random_hex() else {
            return plain(
                StatusCode::INTERNAL_SERVER_ERROR,
                "no randomness for a sign-in",
            );
        };
        let lasts = principal
            .expires_at
            .or(tokens.expires_at)
            .map_or(SIGNED_IN_AT_MOST, seconds_from_now)
            .min(SIGNED_IN_AT_MOST);
        {
            let mut people = lock(&self.people);
            let now = Instant::now();
            people.retain(|_, (_, until)| *until > now);
            if people.len() >= PEOPLE_AT_MOST {
                return plain(StatusCode::SERVICE_UNAVAILABLE, "too many people signed in");
            }
            people.insert(value.clone(), (principal.subject.clone(), now + lasts));
        }
        tracing::info!(subject = %principal.subject, "console: signed in");
        let secure = if self.secure { "; Secure" } else { "" };
        let cookie = format!(
            "{COOKIE_NAME}={value}; Path={}; Max-Age={}; HttpOnly; SameSite=Lax{secure}",
            self.cookie_path,
            lasts.as_secs()
        );
        let mut response = self.to_the_pages();
        if let Ok(cookie) = HeaderValue::from_str(&cookie) {
            response.headers_mut().insert(SET_COOKIE, cookie);
        }
        response
    }
}

impl Gate {
    /// Sends a person signed in to the pages.
    pub(super) fn to_the_pages(&self) -> Response<Body> {
        let mut response = text(StatusCode::SEE_OTHER, "to the console");
        if let Ok(location) = HeaderValue::from_str(&self.landing) {
            response.headers_mut().insert(LOCATION, location);
        }
        response
    }
}

/// The console's cookie in `headers`, if one is sent.
fn cookie(headers: &HeaderMap) -> Option<&str> {
    headers
        .get_all(COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|pair| pair.trim().split_once('='))
        .find(|(name, _)| *name == COOKIE_NAME)
        .map(|(_, value)| value)
}

fn seconds_from_now(at: u64) -> Duration {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    Duration::from_secs(at.saturating_sub(now))
}

fn lock<T>(mutex: &Mutex<T>) -> std::sync::MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}
