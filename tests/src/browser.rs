//! Headless Chromium screenshots, and a small PNG decoder to check them.
//!
//! Chromium (`/usr/bin/chromium`, installed by `tests/scripts/install-tools.sh`)
//! runs with a fresh profile, no network of its own beyond the page's URL,
//! and is killed with its process group when it overruns.

use std::os::unix::process::CommandExt;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

/// Where Debian's `chromium` package installs the browser.
pub const CHROMIUM: &str = "/usr/bin/chromium";

/// Most time one screenshot may take.
const SCREENSHOT_TIMEOUT: Duration = Duration::from_secs(60);

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
        .args([
            "--headless",
            "--no-sandbox",
            "--disable-gpu",
            "--disable-quic",
            "--no-first-run",
            "--disable-background-networking",
            "--disable-component-update",
            "--disable-sync",
            "--hide-scrollbars",
        ])
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
            let _ = Command::new("kill").args(["-KILL", "--", &format!("-{}", child.id())]).status();
            let _ = child.wait();
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
