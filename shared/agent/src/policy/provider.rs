//! The model providers a repository may ask for: the one vocabulary lives
//! in `agent_zero_contracts`, shared with the model layer.

pub use agent_zero_contracts::{DEFAULT_MODEL, ModelPolicy, ModelProvider};
