//! An in-memory [`Host`] for unit tests: memory KV, a manual clock, a
//! memory lease coordinator, a queue that records what was enqueued, and an
//! HTTP client that refuses every request (a test never reaches a network).

use std::cell::RefCell;

use agent_zero_engine::{Queue, QueueError, Tick};
use agent_zero_ports::{HttpClient, HttpError, ManualClock, MemoryKv};
use agent_zero_runner::MemoryCoordinator;

use crate::{Host, Invocation, Settings};

/// The settings a task needs to be accepted (a sandbox and a model key);
/// none of them is reached by a unit test.
pub(crate) const RUNNABLE: [(&str, &str); 4] = [
    ("AGENT_ZERO_SANDBOX_PROVIDER", "custom"),
    ("AGENT_ZERO_SANDBOX_URL", "http://sandbox.invalid"),
    ("AGENT_ZERO_SANDBOX_TOKEN", "unit-unreached"),
    ("OPENAI_API_KEY", "sk-unit-unreached"),
];

/// Refuses every outbound request.
#[derive(Debug, Default)]
pub(crate) struct RefusingHttp;

impl HttpClient for RefusingHttp {
    async fn send(&self, request: http::Request<Vec<u8>>) -> Result<http::Response<Vec<u8>>, HttpError> {
        Err(HttpError::NotAllowed(request.uri().to_string()))
    }
}

/// Records every enqueued tick.
#[derive(Debug, Default)]
pub(crate) struct RecordingQueue {
    pub(crate) ticks: RefCell<Vec<(Tick, u64)>>,
}

impl Queue for RecordingQueue {
    async fn enqueue(&self, tick: &Tick, delay_ms: u64) -> Result<(), QueueError> {
        self.ticks.borrow_mut().push((tick.clone(), delay_ms));
        Ok(())
    }
}

/// The test host: with [`RefusingHttp`] unless a test gives it a client
/// (a loopback to the fake GitHub, [`TestHost::with_http`]).
#[derive(Debug)]
pub(crate) struct TestHost<H = RefusingHttp> {
    pub(crate) kv: MemoryKv,
    pub(crate) http: H,
    pub(crate) clock: ManualClock,
    pub(crate) queue: RecordingQueue,
    pub(crate) leases: MemoryCoordinator,
    pub(crate) signer: TestSigner,
    requests: RefCell<u64>,
}

/// 2026-05-01T12:00:00Z.
pub(crate) const START_MS: u64 = 1_777_636_800_000;

impl TestHost {
    pub(crate) fn new() -> Self {
        Self::with_http(RefusingHttp)
    }
}

impl<H: HttpClient> TestHost<H> {
    /// A test host whose outbound requests go to `http`.
    pub(crate) fn with_http(http: H) -> Self {
        Self {
            kv: MemoryKv::new(),
            http,
            clock: ManualClock::new(START_MS),
            queue: RecordingQueue::default(),
            leases: MemoryCoordinator::new(),
            signer: TestSigner::Refusing,
            requests: RefCell::new(0),
        }
    }

    /// This host, signing a GitHub App's JWTs as Spin does
    /// ([`agent_zero_github::RsaSigner`]), for a test against the loopback
    /// GitHub, which verifies them.
    #[must_use]
    pub(crate) fn signing(mut self) -> Self {
        self.signer = TestSigner::Rsa;
        self
    }

    /// The next invocation: the clock's time and a fresh request id.
    pub(crate) fn invocation(&self) -> Invocation {
        let mut n = self.requests.borrow_mut();
        *n += 1;
        Invocation {
            now_ms: agent_zero_ports::Clock::now_ms(&self.clock),
            request_id: format!("{:016x}", 0xabc0_0000 + *n),
        }
    }

    /// Sends one request through [`crate::handle`].
    pub(crate) fn send(&self, settings: &Settings, request: http::Request<Vec<u8>>) -> http::Response<Vec<u8>> {
        let invocation = self.invocation();
        block_on(crate::handle(self, settings, &invocation, request))
    }
}

/// Signs nothing unless the test asked for it ([`TestHost::signing`]): most
/// tests reach no GitHub App.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum TestSigner {
    Refusing,
    Rsa,
}

impl agent_zero_github::Rs256Signer for TestSigner {
    async fn sign_rs256(
        &self,
        key: &agent_zero_github::PrivateKeyDer,
        message: &[u8],
    ) -> Result<Vec<u8>, agent_zero_github::CredentialsError> {
        match self {
            Self::Rsa => agent_zero_github::Rs256Signer::sign_rs256(&agent_zero_github::RsaSigner, key, message).await,
            Self::Refusing => {
                Err(agent_zero_github::CredentialsError::Signing { reason: "the test host has no signer".into() })
            }
        }
    }
}

impl<H: HttpClient> Host for TestHost<H> {
    type Kv = MemoryKv;
    type Http = H;
    type Clock = ManualClock;
    type Queue = RecordingQueue;
    type Leases = MemoryCoordinator;
    type Signer = TestSigner;

    fn name(&self) -> &'static str {
        "test"
    }
    fn kv(&self) -> &MemoryKv {
        &self.kv
    }
    fn http(&self) -> &H {
        &self.http
    }
    fn clock(&self) -> &ManualClock {
        &self.clock
    }
    fn queue(&self) -> &RecordingQueue {
        &self.queue
    }
    fn leases(&self) -> &MemoryCoordinator {
        &self.leases
    }
    fn signer(&self) -> &TestSigner {
        &self.signer
    }
    async fn ed25519(&self, seed: &[u8; 32], message: Option<&[u8]>) -> Result<crate::Ed25519, String> {
        use ed25519_dalek::Signer as _;
        let key = ed25519_dalek::SigningKey::from_bytes(seed);
        Ok(crate::Ed25519 {
            public_key: key.verifying_key().to_bytes(),
            signature: message.map(|m| key.sign(m).to_bytes()),
        })
    }
}

pub(crate) use agent_zero_ports::block_on;
