//! Raw wasm exports (no wasm-bindgen) so the bench measures the hash, not
//! glue: `alloc` a buffer in linear memory, copy key, body and the expected
//! MAC into it from JS, then `verify`. `unsafe` is confined to turning the
//! (pointer, length) pairs the caller allocated here back into slices.

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// A buffer of `len` bytes that lives until the instance is dropped.
#[unsafe(no_mangle)]
pub extern "C" fn alloc(len: usize) -> *mut u8 {
    Box::leak(vec![0u8; len].into_boxed_slice()).as_mut_ptr()
}

/// 1 when the 32 bytes at `mac` are HMAC-SHA256(key, body), else 0; the
/// comparison is `hmac`'s constant-time `verify_slice`, as in intake.
#[unsafe(no_mangle)]
pub extern "C" fn verify(key: *const u8, key_len: usize, body: *const u8, body_len: usize, mac: *const u8) -> u32 {
    // SAFETY: each pointer came from `alloc` with at least that many bytes.
    let (key, body, mac) = unsafe {
        (
            std::slice::from_raw_parts(key, key_len),
            std::slice::from_raw_parts(body, body_len),
            std::slice::from_raw_parts(mac, 32),
        )
    };
    let mut hmac = Hmac::<Sha256>::new_from_slice(key).expect("HMAC takes any key length");
    hmac.update(body);
    u32::from(hmac.verify_slice(mac).is_ok())
}
