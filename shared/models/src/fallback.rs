//! The operator's fallback: tried only when the primary is *unavailable*
//! (transport, timeout, 5xx, 429 beyond the retry budget, refused at the
//! edge), never because the primary's answer was unusable, a retry fits the
//! budget, or the request was rejected (a configuration to fix).

use crate::{DecisionRequest, ModelAnswer, ModelClient, ModelError, ModelRef};

/// A primary provider with an optional fallback.
#[derive(Debug)]
pub struct FallbackProvider<P, F> {
    primary: P,
    fallback: Option<F>,
}

impl<P: ModelClient, F: ModelClient> FallbackProvider<P, F> {
    /// Wraps `primary`; `fallback` is used only when the primary is unavailable.
    pub fn new(primary: P, fallback: Option<F>) -> Self {
        Self { primary, fallback }
    }
}

impl<P: ModelClient, F: ModelClient> ModelClient for FallbackProvider<P, F> {
    fn model(&self) -> ModelRef {
        self.primary.model()
    }

    async fn decide(&self, request: &DecisionRequest) -> Result<ModelAnswer, ModelError> {
        let primary = match self.primary.decide(request).await {
            Ok(decision) => return Ok(decision),
            Err(e) => e,
        };
        match &self.fallback {
            Some(fallback) if primary.is_unavailable() => fallback
                .decide(request)
                .await
                .map_err(|f| ModelError::FallbackFailed { primary: Box::new(primary), fallback: Box::new(f) }),
            _ => Err(primary),
        }
    }
}
