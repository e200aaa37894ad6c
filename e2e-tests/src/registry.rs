//! A real registry for the suites that push and pull: Debian's `docker-registry` on a free
//! 127.0.0.1 port, speaking plain HTTP, anonymous or behind a login (htpasswd, from
//! apache2-utils). `None` when a program it needs is not installed: the suite says SKIPPED.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use crate::programs::installed;

pub const REGISTRY_BIN: &str = "docker-registry";
pub const HTPASSWD_BIN: &str = "htpasswd";

/// A registry process, always stopped and its storage removed on drop.
pub struct Registry {
    child: Option<Child>,
    /// Scratch space of the registry's own (its config and storage), for the suite's files too.
    pub dir: PathBuf,
    /// `127.0.0.1:PORT`
    pub addr: String,
}

impl Registry {
    /// An anonymous registry.
    pub fn start() -> Option<Registry> {
        Registry::start_with(None)
    }

    /// A registry that answers only `user` logged in with `password` (HTTP basic auth).
    pub fn start_with_login(user: &str, password: &str) -> Option<Registry> {
        Registry::start_with(Some((user, password)))
    }

    fn start_with(login: Option<(&str, &str)>) -> Option<Registry> {
        let bin = installed(REGISTRY_BIN)?;
        let port = TcpListener::bind("127.0.0.1:0")
            .ok()?
            .local_addr()
            .ok()?
            .port();
        let addr = format!("127.0.0.1:{port}");
        let dir = std::env::temp_dir().join(format!(
            "restage-gate-registry-{}-{port}",
            std::process::id()
        ));
        std::fs::create_dir_all(dir.join("data")).ok()?;
        let mut config = format!(
            "version: 0.1\nlog:\n  level: error\nstorage:\n  filesystem:\n    rootdirectory: {}\n  delete:\n    enabled: true\nhttp:\n  addr: {addr}\n",
            dir.join("data").display()
        );
        if let Some((user, password)) = login {
            // The registry reads bcrypt entries only: htpasswd -B.
            let entry = Command::new(installed(HTPASSWD_BIN)?)
                .args(["-Bbn", user, password])
                .output()
                .ok()
                .filter(|o| o.status.success())?;
            std::fs::write(dir.join("htpasswd"), entry.stdout).ok()?;
            config.push_str(&format!(
                "auth:\n  htpasswd:\n    realm: restage-gate-tests\n    path: {}\n",
                dir.join("htpasswd").display()
            ));
        }
        std::fs::write(dir.join("config.yml"), config).ok()?;
        let child = Command::new(bin)
            .arg("serve")
            .arg(dir.join("config.yml"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .ok()?;
        let registry = Registry {
            child: Some(child),
            dir,
            addr,
        };
        let deadline = Instant::now() + Duration::from_secs(20);
        while Instant::now() < deadline {
            if registry.answers() {
                return Some(registry);
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        panic!(
            "docker-registry did not answer on {} within 20 s",
            registry.addr
        );
    }

    /// `GET /v2/` answers 200, or 401 behind a login.
    fn answers(&self) -> bool {
        let Ok(mut s) = TcpStream::connect(&self.addr) else {
            return false;
        };
        let _ = s.set_read_timeout(Some(Duration::from_secs(2)));
        let request = format!(
            "GET /v2/ HTTP/1.1\r\nHost: {}\r\nConnection: close\r\n\r\n",
            self.addr
        );
        let mut answer = String::new();
        s.write_all(request.as_bytes()).is_ok()
            && s.read_to_string(&mut answer).is_ok()
            && (answer.starts_with("HTTP/1.1 200") || answer.starts_with("HTTP/1.1 401"))
    }

    pub fn stop(&mut self) {
        if let Some(mut child) = self.child.take() {
            let _ = child.kill();
            let _ = child.wait();
        }
    }
}

impl Drop for Registry {
    fn drop(&mut self) {
        self.stop();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
