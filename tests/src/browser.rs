//! Headless Chromium: screenshots, and a browser driven over the DevTools
//! protocol that navigates, reads the DOM, clicks and screenshots; with a
//! small PNG decoder to check what it saw.
//!
//! Chromium (`/usr/bin/chromium`, installed by `tests/scripts/install-tools.sh`)
//! runs with a fresh profile, no network of its own beyond the page's URL,
//! and is killed with its process group when it overruns or is dropped.
//! [`Browser`] speaks the protocol over `--remote-debugging-pipe`: JSON
//! messages ended by a NUL byte, read by Chromium from its fd 3 and written
//! to its fd 4 (a shell moves the child's stdin and stdout there before it
//! becomes Chromium, so no websocket and no `unsafe` are needed).

use std::io::{BufRead, BufReader, Write};
use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Child, ChildStdin, Command, Stdio};
use std::sync::mpsc::{Receiver, RecvTimeoutError, channel};
use std::time::{Duration, Instant};

use base64::Engine as _;
use serde_json::{Value, json};

/// Where Debian's `chromium` package installs the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Most time one screenshot may take.
const SCREENSHOT_TIMEOUT: Duration = Duration::from_secs(60);

/// Most time a protocol answer or an awaited event may take.
const PROTOCOL_TIMEOUT: Duration = Duration::from_secs(60);

/// The flags every run of Chromium here takes.
const FLAGS: &[&str] = &[
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--hide-scrollbars",
];

/// Loads `url` in headless Chromium with a `width` x `height` window and
/// returns the PNG it saved.
pub fn screenshot(url: &str, width: u32, height: u32) -> Result<Vec<u8>, String> {
    if !Path::new(CHROMIUM).exists() {
        return Err(format!("{CHROMIUM} is missing: run tests/scripts/install-tools.sh"));
    }
    let temp = tempfile::tempdir().map_err(|e| e.to_string())?;
    let profile = temp.path().join("profile");
    let file = temp.path().join("shot.png");
    let log = std::fs::File::create(temp.path().join("chromium.log")).map_err(|e| e.to_string())?;
    let mut child = Command::new(CHROMIUM)
        .args(FLAGS)
        .arg(format!("--user-data-dir={}", profile.display()))
        .arg(format!("--window-size={width},{height}"))
        .arg(format!("--screenshot={}", file.display()))
        .arg(url)
        .stdin(Stdio::null())
        .stdout(log.try_clone().map_err(|e| e.to_string())?)
        .stderr(log)
        .process_group(0)
        .spawn()
        .map_err(|e| format!("starting {CHROMIUM}: {e}"))?;
    let started = Instant::now();
    let status = loop {
        if let Some(status) = child.try_wait().map_err(|e| e.to_string())? {
            break status;
        }
        if started.elapsed() > SCREENSHOT_TIMEOUT {
            kill_group(&mut child);
            return Err(format!("chromium took more than {SCREENSHOT_TIMEOUT:?} on {url}"));
        }
        std::thread::sleep(Duration::from_millis(100));
    };
    let chromium_log = || std::fs::read_to_string(temp.path().join("chromium.log")).unwrap_or_default();
    if !status.success() {
        return Err(format!("chromium exited with {status} on {url}:\n{}", chromium_log()));
    }
    std::fs::read(&file).map_err(|e| format!("no screenshot of {url} ({e}):\n{}", chromium_log()))
}

fn kill_group(child: &mut Child) {
    let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
    let _ = child.wait();
}

/// One headless Chromium with one page, driven over the DevTools protocol.
/// Its cookie jar is its own (a fresh profile); it follows redirects as a
/// browser does. Every wait is on a protocol answer or event, bounded by
/// [`PROTOCOL_TIMEOUT`].
pub struct Browser {
    child: Child,
    to_chromium: ChildStdin,
    from_chromium: Receiver<Value>,
    /// Events read while waiting for something else, oldest first.
    events: Vec<Value>,
    next_id: u64,
    /// The page's flattened session.
    session: String,
    profile: tempfile::TempDir,
}

impl std::fmt::Debug for Browser {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Browser").field("pid", &self.child.id()).field("session", &self.session).finish()
    }
}

impl Browser {
    /// Starts Chromium with a `width` x `height` viewport and one blank page.
    pub fn launch(width: u32, height: u32) -> Result<Self, String> {
        if !Path::new(CHROMIUM).exists() {
            return Err(format!("{CHROMIUM} is missing: run tests/scripts/install-tools.sh"));
        }
        let profile = tempfile::tempdir().map_err(|e| e.to_string())?;
        let log = std::fs::File::create(profile.path().join("chromium.log")).map_err(|e| e.to_string())?;
        // The shell gives Chromium our pipes as fds 3 (commands) and 4
        // (answers and events), then becomes it.
        let mut child = Command::new("sh")
            .arg("-c")
            .arg(r#"exec "$0" "$@" 3<&0 4>&1 0</dev/null 1>/dev/null"#)
            .arg(CHROMIUM)
            .args(FLAGS)
            .arg("--remote-debugging-pipe")
            .arg(format!("--user-data-dir={}", profile.path().join("profile").display()))
            .arg(format!("--window-size={width},{height}"))
            .arg("about:blank")
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(log)
            .process_group(0)
            .spawn()
            .map_err(|e| format!("starting {CHROMIUM}: {e}"))?;
        let to_chromium = child.stdin.take().ok_or("no pipe to chromium")?;
        let mut reader = BufReader::new(child.stdout.take().ok_or("no pipe from chromium")?);
        let (tx, rx) = channel();
        std::thread::spawn(move || {
            let mut message = Vec::new();
            while reader.read_until(0, &mut message).is_ok_and(|n| n > 0) {
                if message.last() == Some(&0) {
                    message.pop();
                }
                let Ok(value) = serde_json::from_slice::<Value>(&message) else { break };
                if tx.send(value).is_err() {
                    break;
                }
                message.clear();
            }
        });
        let mut browser = Self {
            child,
            to_chromium,
            from_chromium: rx,
            events: Vec::new(),
            next_id: 0,
            session: String::new(),
            profile,
        };
        let targets = browser.call("Target.getTargets", json!({}))?;
        let page = targets["targetInfos"]
            .as_array()
            .and_then(|t| t.iter().find(|t| t["type"] == "page"))
            .and_then(|t| t["targetId"].as_str())
            .map(str::to_owned);
        let page = match page {
            Some(page) => page,
            None => browser.call("Target.createTarget", json!({ "url": "about:blank" }))?["targetId"]
                .as_str()
                .ok_or("Target.createTarget answered no targetId")?
                .to_owned(),
        };
        let attached = browser.call("Target.attachToTarget", json!({ "targetId": page, "flatten": true }))?;
        browser.session =
            attached["sessionId"].as_str().ok_or("Target.attachToTarget answered no sessionId")?.to_owned();
        browser.call("Page.enable", json!({}))?;
        browser.call(
            "Emulation.setDeviceMetricsOverride",
            json!({ "width": width, "height": height, "deviceScaleFactor": 1, "mobile": false }),
        )?;
        Ok(browser)
    }

    /// What Chromium wrote to its stderr so far (for a failure message).
    pub fn log(&self) -> String {
        std::fs::read_to_string(self.profile.path().join("chromium.log")).unwrap_or_default()
    }

    /// Sends `method` (to the page's session, or to the browser for
    /// `Target.*`) and returns its `result`; an `error` answer is an `Err`.
    pub fn call(&mut self, method: &str, params: Value) -> Result<Value, String> {
        self.next_id += 1;
        let id = self.next_id;
        let mut message = json!({ "id": id, "method": method, "params": params });
        if !method.starts_with("Target.") {
            message["sessionId"] = Value::String(self.session.clone());
        }
        let mut bytes = serde_json::to_vec(&message).map_err(|e| e.to_string())?;
        bytes.push(0);
        self.to_chromium
            .write_all(&bytes)
            .and_then(|()| self.to_chromium.flush())
            .map_err(|e| format!("{method}: {e}"))?;
        let deadline = Instant::now() + PROTOCOL_TIMEOUT;
        loop {
            let value = self.next_message(deadline, method)?;
            if value["id"] == id {
                return match value.get("error") {
                    Some(error) => Err(format!("{method}: {error}")),
                    None => Ok(value["result"].clone()),
                };
            }
            if value.get("method").is_some() {
                self.events.push(value);
            }
        }
    }

    fn next_message(&mut self, deadline: Instant, waiting_for: &str) -> Result<Value, String> {
        let left = deadline.saturating_duration_since(Instant::now());
        match self.from_chromium.recv_timeout(left) {
            Ok(value) => Ok(value),
            Err(RecvTimeoutError::Timeout) => Err(format!("no {waiting_for} within {PROTOCOL_TIMEOUT:?}")),
            Err(RecvTimeoutError::Disconnected) => {
                Err(format!("chromium closed its pipe waiting for {waiting_for}:\n{}", self.log()))
            }
        }
    }

    /// Forgets the events read so far (before an action whose own event is awaited).
    fn forget_events(&mut self) {
        self.events.clear();
        while let Ok(value) = self.from_chromium.try_recv() {
            drop(value);
        }
    }

    /// Waits for the page's next event `method` and returns its params.
    pub fn wait_for(&mut self, method: &str) -> Result<Value, String> {
        let session = self.session.clone();
        let is_it = |v: &Value| v["method"] == method && v["sessionId"] == session.as_str();
        if let Some(at) = self.events.iter().position(is_it) {
            return Ok(self.events.remove(at)["params"].clone());
        }
        let deadline = Instant::now() + PROTOCOL_TIMEOUT;
        loop {
            let value = self.next_message(deadline, method)?;
            if is_it(&value) {
                return Ok(value["params"].clone());
            }
        }
    }

    /// Loads `url` (following every redirect) and waits for its load event.
    pub fn navigate(&mut self, url: &str) -> Result<(), String> {
        self.forget_events();
        let answer = self.call("Page.navigate", json!({ "url": url }))?;
        if let Some(error) = answer["errorText"].as_str() {
            return Err(format!("navigating to {url}: {error}"));
        }
        self.wait_for("Page.loadEventFired").map(drop)
    }

    /// The value of the JavaScript expression `expression` on the page
    /// (evaluated by the protocol: the page itself runs no script).
    pub fn evaluate(&mut self, expression: &str) -> Result<Value, String> {
        let answer = self.call("Runtime.evaluate", json!({ "expression": expression, "returnByValue": true }))?;
        if let Some(exception) = answer.get("exceptionDetails") {
            return Err(format!("{expression}: {exception}"));
        }
        Ok(answer["result"]["value"].clone())
    }

    /// The page's URL and its DOM as serialised HTML.
    pub fn dom(&mut self) -> Result<(String, String), String> {
        let value = self.evaluate("[location.href, document.documentElement.outerHTML]")?;
        Ok((value[0].as_str().unwrap_or_default().to_owned(), value[1].as_str().unwrap_or_default().to_owned()))
    }

    /// Clicks the centre of the first element matching `selector` with the
    /// mouse (pressed and released, as a person clicks), scrolled into view
    /// first, and waits for the page the click loads.
    pub fn click_and_wait(&mut self, selector: &str) -> Result<(), String> {
        let selector_json = serde_json::to_string(selector).map_err(|e| e.to_string())?;
        let centre = self.evaluate(&format!(
            "(() => {{ const e = document.querySelector({selector_json}); if (!e) return null; \
e.scrollIntoView({{block: 'center'}}); const r = e.getBoundingClientRect(); \
return [r.left + r.width / 2, r.top + r.height / 2]; }})()"
        ))?;
        let (Some(x), Some(y)) = (centre[0].as_f64(), centre[1].as_f64()) else {
            return Err(format!("no element matches {selector}"));
        };
        self.forget_events();
        for kind in ["mousePressed", "mouseReleased"] {
            self.call(
                "Input.dispatchMouseEvent",
                json!({ "type": kind, "x": x, "y": y, "button": "left", "buttons": 1, "clickCount": 1 }),
            )?;
        }
        self.wait_for("Page.loadEventFired").map(drop)
    }

    /// A PNG of the viewport.
    pub fn screenshot(&mut self) -> Result<Vec<u8>, String> {
        let answer = self.call("Page.captureScreenshot", json!({ "format": "png" }))?;
        let data = answer["data"].as_str().ok_or("Page.captureScreenshot answered no data")?;
        base64::engine::general_purpose::STANDARD.decode(data).map_err(|e| format!("screenshot: {e}"))
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        kill_group(&mut self.child);
    }
}

/// A decoded 8-bit RGB or RGBA image.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Image {
    pub width: u32,
    pub height: u32,
    /// 3 (RGB) or 4 (RGBA).
    pub channels: usize,
    /// Rows top to bottom, `channels` bytes per pixel, no filter bytes.
    pub data: Vec<u8>,
}

impl Image {
    /// How many pixels differ from the most common colour (the background).
    pub fn foreground_pixels(&self) -> usize {
        let mut counts = std::collections::HashMap::new();
        for pixel in self.data.chunks_exact(self.channels) {
            *counts.entry(pixel).or_insert(0usize) += 1;
        }
        let background = counts.values().copied().max().unwrap_or(0);
        self.data.len() / self.channels - background
    }

    /// How many distinct colours the image uses.
    pub fn colours(&self) -> usize {
        self.data.chunks_exact(self.channels).collect::<std::collections::HashSet<_>>().len()
    }
}

/// Decodes a non-interlaced 8-bit RGB or RGBA PNG (what Chromium writes).
pub fn decode_png(bytes: &[u8]) -> Result<Image, String> {
    let rest = bytes.strip_prefix(b"\x89PNG\r\n\x1a\n").ok_or("not a PNG: bad signature")?;
    let mut chunks = rest;
    let mut header = None;
    let mut compressed = Vec::new();
    while chunks.len() >= 12 {
        let length = u32::from_be_bytes(chunks[..4].try_into().map_err(|_| "chunk length")?) as usize;
        let kind = &chunks[4..8];
        let data = chunks.get(8..8 + length).ok_or("truncated chunk")?;
        match kind {
            b"IHDR" => header = Some(data.to_vec()),
            b"IDAT" => compressed.extend_from_slice(data),
            b"IEND" => break,
            _ => {}
        }
        chunks = chunks.get(12 + length..).ok_or("truncated chunk")?;
    }
    let header = header.ok_or("no IHDR chunk")?;
    if header.len() != 13 {
        return Err("IHDR is not 13 bytes".into());
    }
    let width = u32::from_be_bytes(header[0..4].try_into().map_err(|_| "width")?);
    let height = u32::from_be_bytes(header[4..8].try_into().map_err(|_| "height")?);
    let (depth, colour, interlace) = (header[8], header[9], header[12]);
    let channels = match (depth, colour, interlace) {
        (8, 2, 0) => 3,
        (8, 6, 0) => 4,
        _ => return Err(format!("unsupported PNG: depth {depth}, colour type {colour}, interlace {interlace}")),
    };
    let raw = miniz_oxide::inflate::decompress_to_vec_zlib(&compressed).map_err(|e| format!("IDAT: {e:?}"))?;
    let stride = width as usize * channels;
    if raw.len() != (stride + 1) * height as usize {
        return Err(format!("IDAT holds {} bytes, expected {}", raw.len(), (stride + 1) * height as usize));
    }
    let mut data = vec![0u8; stride * height as usize];
    for row in 0..height as usize {
        let filter = raw[row * (stride + 1)];
        let line = &raw[row * (stride + 1) + 1..(row + 1) * (stride + 1)];
        let (done, current) = data.split_at_mut(row * stride);
        let previous = if row == 0 { None } else { Some(&done[(row - 1) * stride..]) };
        let current = &mut current[..stride];
        for i in 0..stride {
            let left = if i >= channels { current[i - channels] } else { 0 };
            let up = previous.map_or(0, |p| p[i]);
            let up_left = if i >= channels { previous.map_or(0, |p| p[i - channels]) } else { 0 };
            let predicted = match filter {
                0 => 0,
                1 => left,
                2 => up,
                3 => ((u16::from(left) + u16::from(up)) / 2) as u8,
                4 => paeth(left, up, up_left),
                other => return Err(format!("row {row}: unknown filter {other}")),
            };
            current[i] = line[i].wrapping_add(predicted);
        }
    }
    Ok(Image { width, height, channels, data })
}

fn paeth(a: u8, b: u8, c: u8) -> u8 {
    let p = i16::from(a) + i16::from(b) - i16::from(c);
    let (pa, pb, pc) = ((p - i16::from(a)).abs(), (p - i16::from(b)).abs(), (p - i16::from(c)).abs());
    if pa <= pb && pa <= pc {
        a
    } else if pb <= pc {
        b
    } else {
        c
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 2x2 RGB PNG whose rows use the Sub and Up filters.
    fn tiny_png() -> Vec<u8> {
        let raw = [1u8, 10, 20, 30, 5, 5, 5, /* row 2, Up */ 2, 1, 1, 1, 0, 0, 0];
        let idat = miniz_oxide::deflate::compress_to_vec_zlib(&raw, 6);
        let mut png = b"\x89PNG\r\n\x1a\n".to_vec();
        let mut chunk = |kind: &[u8], data: &[u8]| {
            png.extend_from_slice(&(data.len() as u32).to_be_bytes());
            png.extend_from_slice(kind);
            png.extend_from_slice(data);
            png.extend_from_slice(&[0; 4]); // CRC, not checked
        };
        chunk(b"IHDR", &[0, 0, 0, 2, 0, 0, 0, 2, 8, 2, 0, 0, 0]);
        chunk(b"IDAT", &idat);
        chunk(b"IEND", &[]);
        png
    }

    /// A page whose form posts to a route that redirects, served once per
    /// request from a loopback socket.
    fn serve_form() -> String {
        use std::io::Read;
        let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}", listener.local_addr().unwrap());
        std::thread::spawn(move || {
            for stream in listener.incoming() {
                let Ok(mut stream) = stream else { break };
                let mut request = vec![0u8; 8192];
                let n = stream.read(&mut request).unwrap_or(0);
                let request = String::from_utf8_lossy(&request[..n]).into_owned();
                let answer = if request.starts_with("POST /submit ") {
                    let body = request.split("\r\n\r\n").nth(1).unwrap_or_default().to_owned();
                    format!(
                        "HTTP/1.1 303 See Other\r\nLocation: /done?{body}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                    )
                } else if request.starts_with("GET /done?") {
                    let query =
                        request.split_whitespace().nth(1).unwrap_or_default().trim_start_matches("/done?").to_owned();
                    let page = format!("<!doctype html><title>done</title><p id=got>{query}</p>");
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    )
                } else {
                    let page = "<!doctype html><title>form</title><form method=post action=/submit>\
<input type=hidden name=csrf value=t0k><button name=decision value=approve>Approve</button></form>";
                    format!(
                        "HTTP/1.1 200 OK\r\nContent-Type: text/html\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{page}",
                        page.len()
                    )
                };
                let _ = stream.write_all(answer.as_bytes());
            }
        });
        url
    }

    #[test]
    fn clicks_a_form_button_follows_the_redirect_and_screenshots() {
        let url = serve_form();
        let mut browser = Browser::launch(320, 240).unwrap_or_else(|e| panic!("{e}"));
        browser.navigate(&format!("{url}/")).unwrap_or_else(|e| panic!("{e}\n{}", browser.log()));
        assert!(browser.dom().unwrap().1.contains("Approve"));
        browser.click_and_wait("button[value=approve]").unwrap_or_else(|e| panic!("{e}"));
        let (at, dom) = browser.dom().unwrap();
        assert_eq!(at, format!("{url}/done?csrf=t0k&decision=approve"));
        assert!(dom.contains("<p id=\"got\">csrf=t0k&amp;decision=approve</p>"), "{dom}");
        assert!(browser.click_and_wait("button.absent").unwrap_err().contains("no element matches"));
        let image = decode_png(&browser.screenshot().unwrap()).unwrap();
        assert_eq!((image.width, image.height), (320, 240));
        assert!(image.foreground_pixels() > 10, "the page looks blank");
    }

    #[test]
    fn decodes_filtered_rows() {
        let image = decode_png(&tiny_png()).unwrap();
        assert_eq!((image.width, image.height, image.channels), (2, 2, 3));
        assert_eq!(image.data, [10, 20, 30, 15, 25, 35, 11, 21, 31, 15, 25, 35]);
        assert_eq!(image.colours(), 3);
        assert_eq!(image.foreground_pixels(), 2);
    }

    #[test]
    fn refuses_what_it_cannot_read() {
        assert!(decode_png(b"GIF89a").is_err());
        let mut png = tiny_png();
        png[8 + 8 + 8] = 16; // bit depth 16
        assert!(decode_png(&png).unwrap_err().contains("depth 16"));
    }
}
