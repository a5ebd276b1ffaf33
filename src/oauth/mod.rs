//! OAuth toward a server at a URL: mcp-chain is the OAuth client of its
//! upstream, as the MCP authorization specification describes, so a
//! server that accepts only OAuth can sit behind mcp-chain's layers.
//!
//! - `challenge`: the server's `WWW-Authenticate`, read;
//! - `discovery`: where to log in (RFC 9728, then RFC 8414 / OpenID);
//! - `register`: who mcp-chain is there (configured, a metadata document,
//!   or registered dynamically, RFC 7591);
//! - `login`, `callback`, `tokens`: the authorization code with PKCE
//!   through the browser and a loopback redirect, refresh, client
//!   credentials;
//! - `store`: the tokens per server, private files in the state directory;
//! - `auth`: the tokens while mcp-chain runs (the header each request
//!   carries, renewal on expiry, 401 and step-up);
//! - `commands`: `login`, `logout`, `auth status`;
//! - `person`: a person signing in to the console at the front's
//!   authorization server.
//!
//! The client of mcp-chain never sees the server's challenge, and its own
//! credentials never reach the server: the upstream's identity is
//! mcp-chain's.

mod auth;
mod callback;
mod challenge;
pub(crate) mod commands;
mod discovery;
mod error;
mod fetch;
mod kept;
mod login;
pub(crate) mod person;
mod register;
mod store;
mod tokens;

pub(crate) use auth::Auth;
pub(crate) use challenge::Challenge;
pub(crate) use error::OAuthError;

#[cfg(test)]
mod tests;
