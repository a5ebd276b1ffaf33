//! `[console]`: the pages mcp-chain serves to a person, from the running
//! process, on loopback. Today: the approval page, where a call that
//! `approve` holds waits when the client cannot ask (`ask = [...,
//! "page"]`); the person clicks Allow once, Allow for this session,
//! Always or Deny, and the call goes on or is refused. The same page lists
//! the approvals that last (Revoke) and what drifted from the config's
//! pins, the pinned and the new definition side by side (Accept, as `pin
//! accept` does; the running pin layer tells its clients the list changed).
//!
//! The page is at `http://127.0.0.1:PORT/SECRET/`, the secret drawn per
//! process (anything else: 404), printed on stderr at start and whenever
//! a burst of approvals begins, when the browser is opened at it
//! (`open = "first-pending"`; `MCP_CHAIN_OPEN_URL` as for the login). It
//! is written to a private file under the state directory too, so
//! `mcp-chain console --config c.toml` can say where the running instance
//! for that config serves it. How a request is judged is `page.rs`.

mod actions;
pub(crate) mod activity;
mod kept;
mod page;
mod recent;
pub(crate) mod sessions;
#[cfg(feature = "remote")]
mod sign_in;
#[cfg(not(feature = "remote"))]
#[path = "no_sign_in.rs"]
mod sign_in;
mod views;

use crate::config::{ConsoleConfig, OpenAt};
use mcp_chain_middleware::approve::desk::{self, Desk};
use mcp_chain_middleware::switch;
use std::future::Future;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use url::Url;

/// What of the config the console shows: the pins it can accept, the
/// audit files whose last lines it shows, the server it guards.
pub(crate) struct Watched {
    pub(crate) pin_files: Vec<PathBuf>,
    pub(crate) audit_files: Vec<PathBuf>,
    pub(crate) server: String,
}

/// Why the console cannot be served.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ConsoleError {
    #[error("console.listen: cannot listen on {addr}: {why}")]
    Listen {
        addr: std::net::SocketAddr,
        why: std::io::Error,
    },
    #[error("console: no randomness for the page's secret")]
    Random,
    #[error("console: {0}")]
    Switches(#[from] mcp_chain_middleware::switch::Unreadable),
    #[error("{0}")]
    SignIn(String),
}

/// Binds the console, installs the process's approval desk, and says
/// where the page is; the task that serves it.
pub(crate) async fn start(
    config: &ConsoleConfig,
    config_path: Option<&Path>,
    watched: Watched,
    front_oauth: Option<&crate::config::FrontOAuth>,
) -> Result<impl Future<Output = ()> + Send + 'static, ConsoleError> {
    let listen_error = |why| ConsoleError::Listen {
        addr: config.listen,
        why,
    };
    let listener = tokio::net::TcpListener::bind(config.listen)
        .await
        .map_err(listen_error)?;
    let bound = listener.local_addr().map_err(listen_error)?;
    let secret = random_hex().ok_or(ConsoleError::Random)?;
    let token = random_hex().ok_or(ConsoleError::Random)?;
    let gate = match (&config.sign_in, front_oauth) {
        (Some(sign_in), Some(oauth)) => {
            Some(sign_in::Gate::new(sign_in, oauth, &secret).map_err(ConsoleError::SignIn)?)
        }
        _ => None,
    };
    // Behind a sign-in the console's address is its public URL; else the
    // secret URL on loopback.
    let url = match &config.sign_in {
        Some(sign_in) => sign_in.public_url.clone(),
        None => Url::parse(&format!("http://{bound}/{secret}/")).expect("a URL of our own making"),
    };
    let open = config.open;
    let shown = url.clone();
    let desk = Arc::new(Desk::new(move || {
        eprintln!("mcp-chain: a call waits for your approval: {shown}");
        if open == OpenAt::FirstPending {
            if let Err((program, why)) = crate::platform::browser::show(&shown) {
                tracing::warn!(%program, error = %why, "the approval page was not opened; open it from the URL above");
            }
        }
    }));
    desk::install(desk.clone());
    sessions::keep();
    // The off switches, kept per server in the state directory.
    if let Ok(state) = crate::platform::dirs::state_dir() {
        let path = state.join("console").join("switches.json");
        let board = Arc::new(switch::Switchboard::load(path, watched.server.clone())?);
        switch::install(board.clone());
        tokio::spawn(board.follow());
    }
    eprintln!("mcp-chain: the approval page is at {url}");
    if let Some(path) = config_path.and_then(url_file) {
        if let Err(e) = mcp_chain_private::write_whole(&path, format!("{url}\n").as_bytes()) {
            tracing::warn!(error = %e, "the console's URL could not be kept for `mcp-chain console`");
        }
    }
    let pages = Arc::new(page::Pages::new(
        desk,
        bound,
        secret,
        token,
        watched,
        gate,
        config.sign_in.as_ref(),
    ));
    Ok(page::serve(listener, pages))
}

/// Serves `[console]` beside the sessions, when configured; a console that
/// cannot listen stops mcp-chain at start.
pub(crate) fn serve_beside(
    runtime: &tokio::runtime::Runtime,
    config: &crate::config::Config,
    server: String,
) -> Result<(), std::process::ExitCode> {
    let Some(console) = &config.console else {
        return Ok(());
    };
    let (mut pin_files, mut audit_files) = (Vec::new(), Vec::new());
    for entry in &config.chain {
        match &entry.layer {
            crate::layers::AnyLayer::Pin(pin) => pin_files.push(pin.pin_file().to_owned()),
            crate::layers::AnyLayer::Audit(audit) => {
                audit_files.extend(audit.file().map(std::path::Path::to_owned))
            }
            _ => {}
        }
    }
    let watched = Watched {
        pin_files,
        audit_files,
        server,
    };
    let started = start(
        console,
        config.path.as_deref(),
        watched,
        config.front.oauth.as_deref(),
    );
    match runtime.block_on(started) {
        Ok(task) => {
            runtime.spawn(task);
            Ok(())
        }
        Err(e) => {
            eprintln!("mcp-chain: {e}");
            Err(std::process::ExitCode::FAILURE)
        }
    }
}

/// 128 bits from the OS's generator, as hex.
fn random_hex() -> Option<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).ok()?;
    Some(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// Where the running instance for `config_path` keeps its console's URL:
/// one file per config (its canonical path, hashed), in the state
/// directory, private to the user.
fn url_file(config_path: &Path) -> Option<PathBuf> {
    use std::hash::{Hash, Hasher};
    let canonical = std::fs::canonicalize(config_path).ok()?;
    let mut hasher = std::hash::DefaultHasher::new();
    canonical.hash(&mut hasher);
    let dir = crate::platform::dirs::state_dir().ok()?.join("console");
    Some(dir.join(format!("{:016x}.url", hasher.finish())))
}

/// `mcp-chain console --config c.toml`: the URL of the console of the
/// running instance for that config, or why there is none.
pub(crate) fn run_command(config_path: Option<&Path>) -> std::process::ExitCode {
    use std::process::ExitCode;
    let Some(config_path) = config_path else {
        eprintln!("mcp-chain console: name the config of the running instance (--config c.toml)");
        return ExitCode::FAILURE;
    };
    let Some(file) = url_file(config_path) else {
        eprintln!(
            "mcp-chain console: {} cannot be read",
            config_path.display()
        );
        return ExitCode::FAILURE;
    };
    let url = std::fs::read_to_string(&file)
        .ok()
        .and_then(|text| Url::parse(text.trim()).ok());
    let answering = url.as_ref().is_some_and(|url| {
        let addr = url
            .socket_addrs(|| None)
            .ok()
            .and_then(|a| a.into_iter().next());
        addr.is_some_and(|addr| {
            std::net::TcpStream::connect_timeout(&addr, std::time::Duration::from_secs(2)).is_ok()
        })
    });
    match url {
        Some(url) if answering => {
            // The command's own output (stdout is no protocol channel here).
            let _ =
                std::io::Write::write_all(&mut std::io::stdout(), format!("{url}\n").as_bytes());
            ExitCode::SUCCESS
        }
        _ => {
            eprintln!(
                "mcp-chain console: no running mcp-chain serves a console for {} (is [console] in it, and is it running?)",
                config_path.display()
            );
            ExitCode::FAILURE
        }
    }
}
