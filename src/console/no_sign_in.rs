//! Without the `remote` feature there is no HTTP client to sign people in
//! with: a console behind a sign-in cannot be made (`new` says why), and
//! nothing that holds one can be reached.

use super::page::Body;
use crate::config::{FrontOAuth, SignInConfig};
use hyper::header::HeaderMap;
use hyper::Response;

pub(super) enum Gate {}

impl Gate {
    pub(super) fn new(_: &SignInConfig, _: &FrontOAuth, _: &str) -> Result<Self, String> {
        Err("console.client_id: this mcp-chain was built without the `remote` feature, which a sign-in needs".to_owned())
    }

    pub(super) fn person(&self, _: &HeaderMap) -> Option<String> {
        match *self {}
    }

    pub(super) async fn begin(&self) -> Response<Body> {
        match *self {}
    }

    pub(super) async fn callback(&self, _: Option<&str>) -> Response<Body> {
        match *self {}
    }

    pub(super) fn to_the_pages(&self) -> Response<Body> {
        match *self {}
    }
}
