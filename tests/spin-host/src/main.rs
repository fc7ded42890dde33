//! A Spin-compatible host for tests and local runs.
//!
//! No Spin CLI can be installed on our build machines, so this host serves
//! a Spin application the way `spin up` does for what our components use:
//! it reads `spin.toml` (manifest v2), instantiates the routed HTTP component
//! per request on wasmtime with WASI 0.2 and `wasi:http`, and provides Spin's
//! `fermyon:spin/key-value@2.0.0` (persisted in `--kv-dir`, `default` store,
//! `key_value_stores` enforced), `wasi:keyvalue/store` and
//! `wasi:keyvalue/atomics@0.2.0-draft2` and `batch` over the same stores (with the
//! semantics of Spin's default SQLite store unless `--kv-semantics strict`,
//! see `kv`), Spin's SQLite, `spin:sqlite/sqlite@3.0.0` (the `default`
//! database, one file in `--kv-dir` that every component shares,
//! `sqlite_databases` enforced, see `sqlite`), and `fermyon:spin/variables@2.0.0`
//! (`SPIN_VARIABLE_*` environment, then manifest defaults), and enforces
//! `allowed_outbound_hosts` on outbound HTTP.
//!
//! Like Spin, it also does service chaining and private routes: a trigger
//! with `route = { private = true }` is never reached by an external request,
//! and an outbound request to `http://<component-id>.spin.internal/...`
//! (allowed by the caller's `allowed_outbound_hosts`, where
//! `http://*.spin.internal` means every component of the app) runs that
//! component in-process, public or private, with its own instance,
//! variables, stores and allowed hosts, and comes back as the response.
//!
//! Requests run on several threads at once, as in Spin, and a store call of
//! one can fall between two of another's (`--kv-race-window-ms`).
//!
//! A platform's limits can be enforced: `--wall-clock-secs N` ends an
//! invocation (external or chained) N seconds after it started, as a hosted
//! Spin ends a handler past its time limit, and `--outbound-per-hour N`
//! refuses a component's outbound request past N in the last hour.
//!
//! For the benchmarks (tests/bench/cost.sh, docs/cost.md), `--report-cpu`
//! prints one structured line per component compiled at start
//! (`spin-component-compiled`: compile time) and per invocation
//! (`spin-invocation-cpu`: the thread CPU time spent instantiating and
//! running it, on whichever threads polled it, the store's work within it,
//! and its wall time).
//!
//! Usage: `agent-zero-spin-host --manifest spin.toml --listen 127.0.0.1:3000 --kv-dir DIR`

mod cpu;
pub mod kv;
mod manifest;
mod outbound;
pub mod sqlite;

use std::path::PathBuf;
use std::sync::Arc;

use anyhow::{Context, bail};
use hyper::server::conn::http1;
use tokio::net::TcpListener;
use wasmtime::component::{Component, HasSelf, Linker, Resource, ResourceTable};
use wasmtime::{Config, Engine, Store};
use wasmtime_wasi::{WasiCtx, WasiCtxView, WasiView};
use wasmtime_wasi_http::io::TokioIo;
use wasmtime_wasi_http::p2::bindings::ProxyPre;
use wasmtime_wasi_http::p2::bindings::http::types::Scheme;
use wasmtime_wasi_http::p2::body::HyperOutgoingBody;
use wasmtime_wasi_http::{WasiBody, WasiHttpCtx, WasiHttpCtxView, WasiHttpHooks, WasiHttpView};

mod bindings {
    wasmtime::component::bindgen!({
        path: "wit",
        world: "agent-zero:spin-host/spin-imports",
        with: {
            "fermyon:spin/key-value.store": crate::kv::KvStore,
            "wasi:keyvalue/store.bucket": crate::kv::KvStore,
            "wasi:keyvalue/atomics.cas": crate::kv::Cas,
            "spin:sqlite/sqlite.connection": crate::sqlite::Connection,
        },
        imports: {
            // A statement runs on the blocking pool (see `sqlite`).
            "spin:sqlite/sqlite.[method]connection.execute": async,
            // Cannot answer an error: a failure traps, as in Spin.
            "spin:sqlite/sqlite.[method]connection.changes": trappable,
            "spin:sqlite/sqlite.[method]connection.last-insert-rowid": trappable,
        },
    });
}

use bindings::fermyon::spin::{key_value, variables};
use bindings::wasi::keyvalue::{atomics, batch, store as wasi_store};

/// Every component of the application: service chaining finds its callee here.
type Apps = Arc<[Arc<App>]>;

/// What every request of one component shares.
struct App {
    component: manifest::Component,
    pre: ProxyPre<RequestState>,
    allowed: outbound::AllowedHosts,
    kv_dir: PathBuf,
    /// What it may open of `spin:sqlite`.
    sqlite: sqlite::Databases,
    limits: Limits,
    /// This component's outbound requests in the last hour.
    outbound: outbound::Meter,
}

/// What this host enforces on every component, like a hosted platform.
#[derive(Debug, Clone)]
struct Limits {
    kv: kv::Options,
    /// Longest an invocation runs, from instantiation to its handler's end.
    wall_clock: Option<std::time::Duration>,
    /// Outbound requests allowed per rolling hour, counted per component.
    outbound_per_hour: Option<usize>,
    /// Print each invocation's CPU time (`--report-cpu`).
    report_cpu: bool,
}

/// Per-request store data.
struct RequestState {
    wasi: WasiCtx,
    http: WasiHttpCtx,
    table: ResourceTable,
    hooks: OutboundHooks,
    sqlite: sqlite::Instance,
    app: Arc<App>,
}

impl WasiView for RequestState {
    fn ctx(&mut self) -> WasiCtxView<'_> {
        WasiCtxView { ctx: &mut self.wasi, table: &mut self.table }
    }
}

impl WasiHttpView for RequestState {
    fn http(&mut self) -> WasiHttpCtxView<'_> {
        WasiHttpCtxView { ctx: &mut self.http, table: &mut self.table, hooks: &mut self.hooks }
    }
}

/// Refuses outbound requests to hosts the component did not declare, and
/// hands requests to `<component-id>.spin.internal` to that component.
struct OutboundHooks {
    allowed: outbound::AllowedHosts,
    apps: Apps,
    app: Arc<App>,
}

impl WasiHttpHooks for OutboundHooks {
    fn send_request(
        &mut self,
        request: http::Request<WasiBody>,
        options: Option<wasmtime_wasi_http::RequestOptions>,
        fut: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
    ) -> Box<
        dyn Future<
                Output = wasmtime_wasi_http::Result<(
                    http::Response<WasiBody>,
                    Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send>,
                )>,
            > + Send,
    > {
        let id = match outbound::destination(&self.allowed, request.uri()) {
            outbound::Destination::Denied => {
                eprintln!("spin-host: outbound request to {} denied by allowed_outbound_hosts", request.uri());
                return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
            }
            outbound::Destination::Network => {
                if let Err(reason) = self.app.outbound.admit(self.app.limits.outbound_per_hour) {
                    eprintln!(
                        "spin-host: {}: outbound request to {} refused: {reason}",
                        self.app.component.id,
                        request.uri()
                    );
                    return Box::new(async { Err(wasmtime_wasi_http::Error::HttpRequestDenied) });
                }
                let mut default: [(); 0] = [];
                return WasiHttpHooks::send_request(&mut default, request, options, fut);
            }
            outbound::Destination::Component(id) => id.to_owned(),
        };
        let Some(callee) = self.apps.iter().find(|a| a.component.id == id).cloned() else {
            // Spin traps the caller here ("unknown routing destination",
            // HttpServer::handle_trigger_route in crates/trigger-http/src/
            // server.rs); these hooks can only answer an error code.
            let message = format!("service chaining: unknown routing destination `{id}` (no HTTP trigger for it)");
            eprintln!("spin-host: {message}");
            return Box::new(async { Err(wasmtime_wasi_http::Error::InternalError(Some(message))) });
        };
        let apps = self.apps.clone();
        Box::new(async move {
            let response = handle(&apps, &callee, chained_request(request))
                .await
                .map_err(|e| wasmtime_wasi_http::Error::InternalError(Some(format!("{e:#}"))))?;
            let io: Box<dyn Future<Output = wasmtime_wasi_http::Result<()>> + Send> = Box::new(async { Ok(()) });
            Ok((response, io))
        })
    }
}

/// The callee's view of a chained request, as Spin builds it: no `Host`
/// header (`RequestSender::prepare_request` in crates/factor-outbound-http/
/// src/wasi.rs removes it), and an `http` URI keeping the
/// `<id>.spin.internal` authority (`set_req_uri` with the chained `http`
/// scheme, crates/trigger-http/src/{outbound_http,server}.rs).
fn chained_request(mut request: http::Request<WasiBody>) -> http::Request<WasiBody> {
    request.headers_mut().remove(http::header::HOST);
    let mut parts = request.uri().clone().into_parts();
    parts.scheme = Some(http::uri::Scheme::HTTP);
    if let Ok(uri) = http::Uri::from_parts(parts) {
        *request.uri_mut() = uri;
    }
    request
}

impl key_value::Host for RequestState {}

impl key_value::HostStore for RequestState {
    fn open(&mut self, label: String) -> Result<Resource<kv::KvStore>, key_value::Error> {
        let store =
            kv::KvStore::open(&self.app.kv_dir, self.app.limits.kv, &self.app.component.key_value_stores, &label)
                .map_err(kv_error)?;
        self.table.push(store).map_err(|e| key_value::Error::Other(e.to_string()))
    }

    fn get(&mut self, store: Resource<kv::KvStore>, key: String) -> Result<Option<Vec<u8>>, key_value::Error> {
        self.store(&store)?.get(&key).map_err(kv_error)
    }

    fn set(&mut self, store: Resource<kv::KvStore>, key: String, value: Vec<u8>) -> Result<(), key_value::Error> {
        self.store(&store)?.set(&key, &value).map_err(kv_error)
    }

    fn delete(&mut self, store: Resource<kv::KvStore>, key: String) -> Result<(), key_value::Error> {
        self.store(&store)?.delete(&key).map_err(kv_error)
    }

    fn exists(&mut self, store: Resource<kv::KvStore>, key: String) -> Result<bool, key_value::Error> {
        Ok(self.store(&store)?.get(&key).map_err(kv_error)?.is_some())
    }

    fn get_keys(&mut self, store: Resource<kv::KvStore>) -> Result<Vec<String>, key_value::Error> {
        self.store(&store)?.keys().map_err(kv_error)
    }

    fn drop(&mut self, store: Resource<kv::KvStore>) -> wasmtime::Result<()> {
        self.table.delete(store)?;
        Ok(())
    }
}

impl RequestState {
    fn store(&self, store: &Resource<kv::KvStore>) -> Result<&kv::KvStore, key_value::Error> {
        self.table.get(store).map_err(|e| key_value::Error::Other(e.to_string()))
    }
}

fn kv_error(e: kv::KvError) -> key_value::Error {
    match e {
        kv::KvError::NoSuchStore => key_value::Error::NoSuchStore,
        kv::KvError::AccessDenied => key_value::Error::AccessDenied,
        kv::KvError::Other(m) => key_value::Error::Other(m),
    }
}

impl wasi_store::Host for RequestState {
    /// Opens `identifier` under the same `key_value_stores` rule as
    /// `fermyon:spin/key-value`'s `open` (Spin does the same in both).
    fn open(&mut self, identifier: String) -> Result<Resource<kv::KvStore>, wasi_store::Error> {
        let store =
            kv::KvStore::open(&self.app.kv_dir, self.app.limits.kv, &self.app.component.key_value_stores, &identifier)
                .map_err(wasi_error)?;
        self.table.push(store).map_err(|e| wasi_store::Error::Other(e.to_string()))
    }
}

impl wasi_store::HostBucket for RequestState {
    fn get(&mut self, bucket: Resource<kv::KvStore>, key: String) -> Result<Option<Vec<u8>>, wasi_store::Error> {
        self.bucket(&bucket)?.get(&key).map_err(wasi_error)
    }

    fn set(&mut self, bucket: Resource<kv::KvStore>, key: String, value: Vec<u8>) -> Result<(), wasi_store::Error> {
        self.bucket(&bucket)?.set(&key, &value).map_err(wasi_error)
    }

    fn delete(&mut self, bucket: Resource<kv::KvStore>, key: String) -> Result<(), wasi_store::Error> {
        self.bucket(&bucket)?.delete(&key).map_err(wasi_error)
    }

    fn exists(&mut self, bucket: Resource<kv::KvStore>, key: String) -> Result<bool, wasi_store::Error> {
        Ok(self.bucket(&bucket)?.get(&key).map_err(wasi_error)?.is_some())
    }

    /// Every key in one page (no cursor), as Spin's own stores answer.
    fn list_keys(
        &mut self,
        bucket: Resource<kv::KvStore>,
        _cursor: Option<String>,
    ) -> Result<wasi_store::KeyResponse, wasi_store::Error> {
        let keys = self.bucket(&bucket)?.keys().map_err(wasi_error)?;
        Ok(wasi_store::KeyResponse { keys, cursor: None })
    }

    fn drop(&mut self, bucket: Resource<kv::KvStore>) -> wasmtime::Result<()> {
        self.table.delete(bucket)?;
        Ok(())
    }
}

impl atomics::HostCas for RequestState {
    /// `cas.new` captures the key's value now (see `kv::Cas`).
    fn new(&mut self, bucket: Resource<kv::KvStore>, key: String) -> Result<Resource<kv::Cas>, wasi_store::Error> {
        let cas = self.bucket(&bucket)?.cas(&key).map_err(wasi_error)?;
        self.table.push(cas).map_err(|e| wasi_store::Error::Other(e.to_string()))
    }

    fn current(&mut self, cas: Resource<kv::Cas>) -> Result<Option<Vec<u8>>, wasi_store::Error> {
        self.table.get_mut(&cas).map_err(|e| wasi_store::Error::Other(e.to_string()))?.current().map_err(wasi_error)
    }

    fn drop(&mut self, cas: Resource<kv::Cas>) -> wasmtime::Result<()> {
        self.table.delete(cas)?;
        Ok(())
    }
}

impl atomics::Host for RequestState {
    fn increment(&mut self, bucket: Resource<kv::KvStore>, key: String, delta: i64) -> Result<i64, wasi_store::Error> {
        self.bucket(&bucket)?.increment(&key, delta).map_err(wasi_error)
    }

    /// Consumes the handle; on `cas-failed` hands back a new one based on
    /// the latest value, as atomic.wit requires.
    fn swap(&mut self, cas: Resource<kv::Cas>, value: Vec<u8>) -> Result<(), atomics::CasError> {
        let store_error = |e: String| atomics::CasError::StoreError(wasi_store::Error::Other(e));
        let cas = self.table.delete(cas).map_err(|e| store_error(e.to_string()))?;
        match cas.swap(&value).map_err(|e| atomics::CasError::StoreError(wasi_error(e)))? {
            Ok(()) => Ok(()),
            Err(newer) => {
                let newer = self.table.push(newer).map_err(|e| store_error(e.to_string()))?;
                Err(atomics::CasError::CasFailed(newer))
            }
        }
    }
}

/// Spin answers an empty batch without touching the store
/// (`crates/factor-key-value/src/host.rs`, `wasi_keyvalue::batch::Host`).
impl batch::Host for RequestState {
    fn get_many(&mut self, bucket: Resource<kv::KvStore>, keys: Vec<String>) -> Result<kv::Found, wasi_store::Error> {
        let store = self.bucket(&bucket)?;
        if keys.is_empty() {
            return Ok(Vec::new());
        }
        store.get_many(&keys).map_err(wasi_error)
    }

    fn set_many(
        &mut self,
        bucket: Resource<kv::KvStore>,
        pairs: Vec<(String, Vec<u8>)>,
    ) -> Result<(), wasi_store::Error> {
        let store = self.bucket(&bucket)?;
        if pairs.is_empty() {
            return Ok(());
        }
        store.set_many(&pairs).map_err(wasi_error)
    }

    fn delete_many(&mut self, bucket: Resource<kv::KvStore>, keys: Vec<String>) -> Result<(), wasi_store::Error> {
        let store = self.bucket(&bucket)?;
        if keys.is_empty() {
            return Ok(());
        }
        store.delete_many(&keys).map_err(wasi_error)
    }
}

impl RequestState {
    fn bucket(&self, bucket: &Resource<kv::KvStore>) -> Result<&kv::KvStore, wasi_store::Error> {
        self.table.get(bucket).map_err(|e| wasi_store::Error::Other(e.to_string()))
    }
}

fn wasi_error(e: kv::KvError) -> wasi_store::Error {
    match e {
        kv::KvError::NoSuchStore => wasi_store::Error::NoSuchStore,
        kv::KvError::AccessDenied => wasi_store::Error::AccessDenied,
        kv::KvError::Other(m) => wasi_store::Error::Other(m),
    }
}

impl variables::Host for RequestState {
    fn get(&mut self, name: String) -> Result<String, variables::Error> {
        if name.is_empty() || !name.bytes().all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'_') {
            return Err(variables::Error::InvalidName(name));
        }
        self.app.component.variables.get(&name).cloned().ok_or(variables::Error::Undefined(name))
    }
}

struct Args {
    manifest: PathBuf,
    listen: String,
    kv_dir: PathBuf,
    /// `POST <path>` every `<secs>` seconds, like a platform cron job
    /// (Fermyon Cloud cron jobs, spin-trigger-cron) calling the app.
    cron: Option<(String, u64)>,
    limits: Limits,
}

fn args() -> anyhow::Result<Args> {
    let mut manifest = PathBuf::from("spin.toml");
    let mut listen = "127.0.0.1:3000".to_owned();
    let mut kv_dir = PathBuf::from(".spin-kv");
    let mut cron = None;
    let mut limits =
        Limits { kv: kv::Options::default(), wall_clock: None, outbound_per_hour: None, report_cpu: false };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = || it.next().with_context(|| format!("{arg} needs a value"));
        match arg.as_str() {
            "--manifest" => manifest = value()?.into(),
            "--listen" => listen = value()?,
            "--kv-dir" => kv_dir = value()?.into(),
            "--cron" => {
                let spec = value()?;
                let (path, secs) = spec.rsplit_once('@').context("--cron takes PATH@SECONDS")?;
                cron = Some((path.to_owned(), secs.parse().context("--cron seconds")?));
            }
            "--kv-semantics" => {
                let name = value()?;
                limits.kv.semantics = kv::Semantics::parse(&name)
                    .with_context(|| format!("--kv-semantics `{name}`: sqlite or strict"))?;
            }
            "--kv-race-window-ms" => {
                limits.kv.race_window =
                    std::time::Duration::from_millis(value()?.parse().context("--kv-race-window-ms")?);
            }
            "--wall-clock-secs" => {
                let secs: f64 = value()?.parse().context("--wall-clock-secs")?;
                limits.wall_clock = Some(std::time::Duration::from_secs_f64(secs));
            }
            "--outbound-per-hour" => limits.outbound_per_hour = Some(value()?.parse().context("--outbound-per-hour")?),
            "--report-cpu" => limits.report_cpu = true,
            "--help" | "-h" => {
                println!(
                    "usage: agent-zero-spin-host [--manifest spin.toml] [--listen ADDR] [--kv-dir DIR] [--cron PATH@SECONDS]"
                );
                println!(
                    "  [--kv-semantics sqlite|strict] [--kv-race-window-ms MS] [--wall-clock-secs S] [--outbound-per-hour N]"
                );
                println!("  [--report-cpu]: one line per compiled component and per invocation with its CPU time");
                println!(
                    "  key-value and spin:sqlite data live in --kv-dir (SQLite: DIR/sqlite_db.db, the `default` database)"
                );
                println!(
                    "  --kv-semantics sqlite (default): a swap from absent is an upsert, as in Spin's default store"
                );
                println!(
                    "  --cron sends `POST PATH` every SECONDS with `Authorization: Bearer $AGENT_ZERO_SPIN_HOST_CRON_TOKEN`"
                );
                std::process::exit(0);
            }
            other => bail!("unknown argument `{other}`"),
        }
    }
    Ok(Args { manifest, listen, kv_dir, cron, limits })
}

#[tokio::main(flavor = "multi_thread", worker_threads = 2)]
async fn main() -> anyhow::Result<()> {
    let args = args()?;
    let manifest = manifest::load(&args.manifest, &|name| std::env::var(name).ok())?;
    sqlite::check_labels(&manifest.components)?;

    let engine = Engine::new(&Config::new())?;

    let mut apps = Vec::new();
    for component in manifest.components {
        let started = std::time::Instant::now();
        let compiled = Component::from_file(&engine, &component.source).map_err(|e| {
            anyhow::anyhow!("loading component `{}` from {}: {e:?}", component.id, component.source.display())
        })?;
        if args.limits.report_cpu {
            let compile_ms = started.elapsed().as_secs_f64() * 1e3;
            eprintln!(
                r#"{{"agentZero":"spin-component-compiled","component":"{}","compileMs":{compile_ms:.1}}}"#,
                component.id
            );
        }
        let mut linker: Linker<RequestState> = Linker::new(&engine);
        wasmtime_wasi::p2::add_to_linker_async(&mut linker)?;
        wasmtime_wasi_http::p2::add_only_http_to_linker_async(&mut linker)?;
        bindings::SpinImports::add_to_linker::<_, HasSelf<RequestState>>(&mut linker, |s| s)?;
        let pre = ProxyPre::new(linker.instantiate_pre(&compiled).map_err(|e| {
            anyhow::anyhow!("component `{}` imports something this host does not provide: {e:?}", component.id)
        })?)?;
        let allowed = outbound::AllowedHosts::parse(&component.allowed_outbound_hosts)?
            .expand_service_chaining(&manifest.component_ids);
        let sqlite = sqlite::Databases::new(&args.kv_dir, &component.sqlite_databases);
        apps.push(Arc::new(App {
            sqlite,
            component,
            pre,
            allowed,
            kv_dir: args.kv_dir.clone(),
            limits: args.limits.clone(),
            outbound: outbound::Meter::default(),
        }));
    }
    let apps: Apps = apps.into();

    let listener = TcpListener::bind(&args.listen).await.with_context(|| format!("binding {}", args.listen))?;
    let local = listener.local_addr()?;
    eprintln!("spin-host: serving {} on http://{local}", args.manifest.display());
    if let Some((path, secs)) = args.cron.clone() {
        tokio::task::spawn(cron(local, path, secs));
    }
    loop {
        let (client, _) = listener.accept().await?;
        let apps = apps.clone();
        tokio::task::spawn(async move {
            let service = hyper::service::service_fn(move |req| {
                let apps = apps.clone();
                async move { serve(&apps, local, req).await }
            });
            if let Err(e) = http1::Builder::new().keep_alive(true).serve_connection(TokioIo::new(client), service).await
            {
                eprintln!("spin-host: connection error: {e}");
            }
        });
    }
}

/// Calls `POST path` on this host every `secs` seconds, the way a platform
/// cron job calls a deployed app.
async fn cron(addr: std::net::SocketAddr, path: String, secs: u64) {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let token = std::env::var("AGENT_ZERO_SPIN_HOST_CRON_TOKEN").unwrap_or_default();
    loop {
        tokio::time::sleep(std::time::Duration::from_secs(secs)).await;
        let Ok(mut stream) = tokio::net::TcpStream::connect(addr).await else { continue };
        let request = format!(
            "POST {path} HTTP/1.1\r\nHost: {addr}\r\nAuthorization: Bearer {token}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
        );
        if stream.write_all(request.as_bytes()).await.is_ok() {
            let mut sink = Vec::new();
            let _ = stream.read_to_end(&mut sink).await;
        }
    }
}

/// Routes an external request by path; private routes never match.
async fn serve(
    apps: &Apps,
    local: std::net::SocketAddr,
    mut req: hyper::Request<hyper::body::Incoming>,
) -> anyhow::Result<hyper::Response<HyperOutgoingBody>> {
    // As Spin's `strip_forbidden_headers` (crates/trigger-http/src/
    // headers.rs): an external request cannot pose as a chained one. The
    // guest then sees the listener's address, as Spin builds the URI from it.
    let headers = req.headers_mut();
    if headers.get(http::header::HOST).and_then(|h| h.to_str().ok()).is_some_and(outbound::is_service_chaining_host) {
        headers.remove(http::header::HOST);
        if let Ok(listener) = http::HeaderValue::from_str(&local.to_string()) {
            headers.insert(http::header::HOST, listener);
        }
    }
    headers.remove(http::header::CONNECTION);
    let path = req.uri().path().to_owned();
    let Some(app) = apps.iter().find(|a| a.component.route.matches(&path)) else {
        return Ok(plain(404, "no Spin route matches this path"));
    };
    handle(apps, app, req).await
}

/// Runs `app`'s handler on `req` in a new instance, as Spin does for each
/// request, external or chained. Answers as soon as the guest sets its
/// response; the guest keeps running in its own task until its handler
/// returns, streaming the body (as Spin's crates/trigger-http/src/wasi.rs).
async fn handle<B>(
    apps: &Apps,
    app: &Arc<App>,
    req: hyper::Request<B>,
) -> anyhow::Result<hyper::Response<HyperOutgoingBody>>
where
    B: hyper::body::Body<Data = bytes::Bytes> + Send + 'static,
    B::Error: Into<wasmtime_wasi_http::Error>,
{
    let mut store = Store::new(
        app.pre.engine(),
        RequestState {
            wasi: WasiCtx::builder().inherit_stdout().inherit_stderr().build(),
            http: WasiHttpCtx::new(),
            table: ResourceTable::new(),
            hooks: OutboundHooks { allowed: app.allowed.clone(), apps: apps.clone(), app: app.clone() },
            sqlite: sqlite::Instance::new(app.sqlite.clone()),
            app: app.clone(),
        },
    );
    let (sender, receiver) = tokio::sync::oneshot::channel();
    let req = store.data_mut().http().new_incoming_request(Scheme::Http, req)?;
    let out = store.data_mut().http().new_response_outparam(sender)?;
    let pre = app.pre.clone();
    let wall_clock = app.limits.wall_clock;
    let id = &app.component.id;
    let label = id.clone();
    let report_cpu = app.limits.report_cpu;
    let task = tokio::task::spawn(async move {
        let cpu_label = label.clone();
        let run = async move {
            let started = std::time::Instant::now();
            let (instantiate, handler) = (cpu::Spent::default(), cpu::Spent::default());
            let proxy = cpu::timed(&instantiate, pre.instantiate_async(&mut store)).await?;
            let instantiated = started.elapsed();
            let done = cpu::timed(&handler, proxy.wasi_http_incoming_handler().call_handle(store, req, out)).await;
            if report_cpu {
                eprintln!(
                    r#"{{"agentZero":"spin-invocation-cpu","component":"{cpu_label}","instantiateUs":{},"instantiateCpuUs":{},"handlerCpuUs":{},"storeCpuUs":{},"storeOps":{},"wallUs":{}}}"#,
                    instantiated.as_micros(),
                    instantiate.micros(),
                    handler.micros(),
                    handler.store_micros(),
                    handler.store_ops(),
                    started.elapsed().as_micros()
                );
            }
            done
        };
        let Some(limit) = wall_clock else { return run.await };
        // Dropping the call ends the instance, as a platform ends a handler
        // past its time limit. Each invocation's wall time is logged, one
        // structured line, for the harness to check against the platform.
        let started = std::time::Instant::now();
        let done = match tokio::time::timeout(limit, run).await {
            Ok(done) => done,
            Err(_) => {
                eprintln!("spin-host: {label}: invocation ended after {limit:?} (--wall-clock-secs)");
                Err(wasmtime::Error::msg(format!("invocation ended after {limit:?}: past the wall-clock limit")))
            }
        };
        let wall_ms = started.elapsed().as_millis();
        eprintln!(r#"{{"agentZero":"spin-invocation","component":"{label}","wallMs":{wall_ms}}}"#);
        done
    });
    match receiver.await {
        Ok(response) => {
            let late = id.clone();
            tokio::task::spawn(async move {
                match task.await {
                    Ok(Ok(())) => {}
                    Ok(Err(e)) => eprintln!("spin-host: {late}: guest trapped after setting its response: {e:?}"),
                    Err(e) => eprintln!("spin-host: {late}: guest task failed after setting its response: {e}"),
                }
            });
            // An error code set as the response is a 500, as in Spin
            // ("guest failed to produce a response").
            Ok(response.unwrap_or_else(|code| {
                let reason = format!("guest set an error response: {code:?}");
                eprintln!("spin-host: {id}: {reason}");
                plain(500, &reason)
            }))
        }
        Err(_) => {
            let reason = match task.await {
                Ok(Ok(())) => "guest never set a response".to_owned(),
                Ok(Err(e)) => format!("guest trapped: {e:?}"),
                Err(e) => format!("guest task failed: {e}"),
            };
            eprintln!("spin-host: {id}: {reason}");
            Ok(plain(500, &reason))
        }
    }
}

fn plain(status: u16, text: &str) -> hyper::Response<HyperOutgoingBody> {
    use http_body_util::BodyExt;
    let body =
        http_body_util::Full::new(bytes::Bytes::from(text.to_owned())).map_err(|never| match never {}).boxed_unsync();
    hyper::Response::builder().status(status).body(body).expect("static response")
}
