//! A small W3C WebDriver client (JSON over HTTP) driving Chromium through `chromedriver`: enough
//! to open a page, find elements, type, click and read text.

use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{json, Value};

/// The W3C key of an element reference in WebDriver answers.
const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

/// Where the browser and its driver are, when both are installed.
pub struct BrowserTools {
    /// The Chromium (or Chrome) executable.
    pub browser: PathBuf,
    /// The matching `chromedriver`.
    pub driver: PathBuf,
}

/// Finds Chromium and chromedriver: `RIFFLE_CHROMIUM` / `RIFFLE_CHROMEDRIVER`, else the usual
/// names on `PATH` (Debian's `chromium` and `chromium-driver` packages).
pub fn find_browser() -> Result<BrowserTools, String> {
    let browser = from_env_or_path(
        "RIFFLE_CHROMIUM",
        &["chromium", "chromium-browser", "google-chrome"],
    )
    .ok_or("no Chromium: install Debian's `chromium` or set RIFFLE_CHROMIUM")?;
    let driver = from_env_or_path("RIFFLE_CHROMEDRIVER", &["chromedriver"])
        .ok_or("no chromedriver: install Debian's `chromium-driver` or set RIFFLE_CHROMEDRIVER")?;
    Ok(BrowserTools { browser, driver })
}

fn from_env_or_path(variable: &str, names: &[&str]) -> Option<PathBuf> {
    if let Some(path) = std::env::var_os(variable) {
        return Some(PathBuf::from(path)).filter(|p| p.is_file());
    }
    let path = std::env::var_os("PATH")?;
    std::env::split_paths(&path)
        .flat_map(|dir| names.iter().map(move |n| dir.join(n)))
        .find(|candidate| candidate.is_file())
}

/// A free TCP port on 127.0.0.1 (free when asked; the driver binds it right after).
fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .expect("a free port")
}

/// A running chromedriver with one headless browser session; both end on drop.
pub struct Browser {
    http: reqwest::Client,
    session: String,
    base: String,
    driver: Child,
    _profile: tempfile::TempDir,
}

impl Browser {
    /// Starts chromedriver on a free port and opens a headless browser session.
    pub async fn start(tools: &BrowserTools) -> Browser {
        let port = free_port();
        let driver = Command::new(&tools.driver)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .unwrap_or_else(|e| panic!("cannot start {}: {e}", tools.driver.display()));
        let base = format!("http://127.0.0.1:{port}");
        let http = reqwest::Client::new();
        let start = Instant::now();
        loop {
            let ready = match http.get(format!("{base}/status")).send().await {
                Ok(r) => r.text().await.ok().and_then(|t| {
                    serde_json::from_str::<Value>(&t).ok()?["value"]["ready"].as_bool()
                }),
                Err(_) => None,
            };
            if ready == Some(true) {
                break;
            }
            assert!(
                start.elapsed() < Duration::from_secs(20),
                "chromedriver did not become ready"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        let profile = tempfile::tempdir().expect("browser profile dir");
        let mut browser = Browser {
            http,
            session: String::new(),
            base,
            driver,
            _profile: profile,
        };
        let capabilities = json!({ "capabilities": { "alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": tools.browser,
                "args": [
                    "--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                    "--window-size=1400,1000",
                    format!("--user-data-dir={}", browser._profile.path().display()),
                ],
            },
        }}});
        let answer = browser.call("POST", "/session", Some(capabilities)).await;
        browser.session = answer["sessionId"]
            .as_str()
            .unwrap_or_else(|| panic!("no session id in {answer}"))
            .to_string();
        browser
    }

    /// One WebDriver command; fails the test on a WebDriver error. Returns `value`.
    async fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        self.request(method, path, body)
            .await
            .unwrap_or_else(|e| panic!("{e}"))
    }

    /// One WebDriver command: its `value`, or the error WebDriver answered.
    async fn request(
        &self,
        method: &str,
        path: &str,
        body: Option<Value>,
    ) -> Result<Value, String> {
        let url = format!("{}{path}", self.base);
        let request = match method {
            "GET" => self.http.get(url),
            "DELETE" => self.http.delete(url),
            _ => self.http.post(url),
        };
        let request = match body {
            Some(b) => request
                .header("content-type", "application/json")
                .body(b.to_string()),
            None => request,
        };
        let response = request
            .send()
            .await
            .map_err(|e| format!("WebDriver {method} {path}: {e}"))?;
        let status = response.status();
        let text = response
            .text()
            .await
            .map_err(|e| format!("WebDriver {method} {path}: {e}"))?;
        let answer: Value = serde_json::from_str(&text)
            .map_err(|e| format!("WebDriver {method} {path}: {e}: {text}"))?;
        if !status.is_success() {
            return Err(format!(
                "WebDriver {method} {path} failed ({status}): {}",
                answer["value"]
            ));
        }
        Ok(answer["value"].clone())
    }

    fn session_path(&self, rest: &str) -> String {
        format!("/session/{}{rest}", self.session)
    }

    /// Opens `url`.
    pub async fn open(&self, url: &str) {
        self.call(
            "POST",
            &self.session_path("/url"),
            Some(json!({ "url": url })),
        )
        .await;
    }

    /// Every element matching the CSS `selector`, as element ids.
    pub async fn find_all(&self, selector: &str) -> Vec<String> {
        let found = self
            .call(
                "POST",
                &self.session_path("/elements"),
                Some(json!({ "using": "css selector", "value": selector })),
            )
            .await;
        found
            .as_array()
            .map(|elements| {
                elements
                    .iter()
                    .filter_map(|e| e[ELEMENT_KEY].as_str().map(str::to_string))
                    .collect()
            })
            .unwrap_or_default()
    }

    /// The visible text of element `element` (empty if the page replaced it meanwhile).
    pub async fn text_of(&self, element: &str) -> String {
        let path = self.session_path(&format!("/element/{element}/text"));
        self.request("GET", &path, None)
            .await
            .ok()
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    }

    /// The rendered text of every element matching `selector`, read in one step in the page
    /// (so a page that redraws itself cannot replace an element between finding and reading).
    pub async fn texts(&self, selector: &str) -> Vec<String> {
        let script =
            "return Array.from(document.querySelectorAll(arguments[0])).map((e) => e.innerText);";
        let texts = self
            .call(
                "POST",
                &self.session_path("/execute/sync"),
                Some(json!({ "script": script, "args": [selector] })),
            )
            .await;
        texts
            .as_array()
            .map(|all| {
                all.iter()
                    .map(|t| t.as_str().unwrap_or_default().to_string())
                    .collect()
            })
            .unwrap_or_default()
    }

    /// Waits (up to 60 s) for an element matching `selector` whose text satisfies `check`;
    /// returns its text.
    pub async fn wait_for(
        &self,
        selector: &str,
        what: &str,
        check: impl Fn(&str) -> bool,
    ) -> String {
        let start = Instant::now();
        loop {
            let seen = self.texts(selector).await;
            if let Some(found) = seen.iter().find(|t| check(t)) {
                return found.clone();
            }
            assert!(
                start.elapsed() < Duration::from_secs(60),
                "timed out waiting for {what} ({selector}); saw {seen:?}"
            );
            tokio::time::sleep(Duration::from_millis(200)).await;
        }
    }

    /// Clicks the first element matching `selector` whose text satisfies `check`, waiting
    /// (up to 60 s) for one; retries when the page replaces the element under the click.
    pub async fn click_on(&self, selector: &str, what: &str, check: impl Fn(&str) -> bool) {
        let start = Instant::now();
        loop {
            let mut clicked = Err(format!("no {what} yet"));
            for element in self.find_all(selector).await {
                if !check(&self.text_of(&element).await) {
                    continue;
                }
                let path = self.session_path(&format!("/element/{element}/click"));
                clicked = self
                    .request("POST", &path, Some(json!({})))
                    .await
                    .map(|_| ());
                break;
            }
            match clicked {
                Ok(()) => return,
                Err(e) => assert!(
                    start.elapsed() < Duration::from_secs(60),
                    "cannot click {what} ({selector}): {e}"
                ),
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }

    /// Clears element `element` and types `text` into it, as keystrokes.
    pub async fn type_into(&self, element: &str, text: &str) {
        self.call(
            "POST",
            &self.session_path(&format!("/element/{element}/clear")),
            Some(json!({})),
        )
        .await;
        self.call(
            "POST",
            &self.session_path(&format!("/element/{element}/value")),
            Some(json!({ "text": text })),
        )
        .await;
    }

    /// The first element matching `selector`; fails the test when there is none.
    pub async fn find(&self, selector: &str) -> String {
        self.find_all(selector)
            .await
            .into_iter()
            .next()
            .unwrap_or_else(|| panic!("no element matches {selector}"))
    }

    /// Ends the browser session.
    pub async fn quit(mut self) {
        self.call("DELETE", &self.session_path(""), None).await;
        self.session.clear();
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        // The driver takes its browser down with it.
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

/// The path of `dir` as a string for a SQL literal.
pub fn sql_path(dir: &Path) -> String {
    dir.display().to_string().replace('\'', "''")
}
