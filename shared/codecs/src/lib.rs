//! The codecs Agent Zero Edge keeps of its own, each because the library
//! way measured worse in the wasm builds (docs/decisions.md has the
//! figures; a test beside each keeps it from being undone unknowingly):
//!
//! - [`json`]: serde_json's parser, with structs read from objects only;
//! - [`read_tag_first`]: internally tagged enums read without buffering;
//! - [`decimal`]: decimals read from text without core's float parser.
//!
//! They live apart from `agent-zero-contracts`, which holds the data
//! contracts only.

#![forbid(unsafe_code)]

pub mod decimal;
pub mod json;
mod tagged;

pub use tagged::{Reordered, TagFirst, read_tag_first};
