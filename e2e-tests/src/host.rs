//! The compiled policy in the waPC host that kwctl and policy-server use: `wapc` over
//! `wasmtime-provider`, with a WASI context (so the module reads the host clock).

use std::sync::Arc;

use restage_gate_evaluation::guest::Guest;
use wapc::{WapcHost, WasiParams};
use wasmtime_provider::{wasmtime, WasmtimeEngineProviderBuilder, WasmtimeEngineProviderPre};

/// A compiled module, ready to instantiate. Compiling is the expensive step, so it is done once
/// and shared; every evaluation gets a fresh instance, as in policy-server.
#[derive(Clone)]
pub struct Module {
    pre: Arc<WasmtimeEngineProviderPre>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Module")
    }
}

impl Module {
    pub fn load(path: &std::path::Path) -> Result<Self, String> {
        Self::from_file(path, WasmtimeEngineProviderBuilder::new())
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        Self::build(WasmtimeEngineProviderBuilder::new().module_bytes(bytes))
    }

    /// Compiled by an engine that writes a perf map (`/tmp/perf-<pid>.map`: where each wasm
    /// function's machine code sits), so a profiler can name the module's functions.
    pub fn profiled(path: &std::path::Path) -> Result<Self, String> {
        let mut config = wasmtime::Config::new();
        config.profiler(wasmtime::ProfilingStrategy::PerfMap);
        let engine = wasmtime::Engine::new(&config).map_err(|e| e.to_string())?;
        Self::from_file(path, WasmtimeEngineProviderBuilder::new().engine(engine))
    }

    /// The module in the file at `path`, compiled by `builder`; errors name the file.
    fn from_file(
        path: &std::path::Path,
        builder: WasmtimeEngineProviderBuilder,
    ) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::build(builder.module_bytes(&bytes)).map_err(|e| format!("{}: {e}", path.display()))
    }

    fn build(builder: WasmtimeEngineProviderBuilder) -> Result<Self, String> {
        let pre = builder
            .wasi_params(WasiParams::default())
            .build_pre()
            .map_err(|e| format!("cannot compile the module: {e}"))?;
        Ok(Module { pre: Arc::new(pre) })
    }

    /// A running instance, for callers that evaluate many requests on one (as `kwctl bench`
    /// does; policy-server takes a fresh one per request, as `call` below does).
    pub fn instance(&self) -> Result<Instance, String> {
        let engine = self
            .pre
            .rehydrate(None)
            .map_err(|e| format!("cannot instantiate the module: {e}"))?;
        // restage-gate asks the host for nothing; any host call is a bug worth failing on.
        let host = WapcHost::new(
            Box::new(engine),
            Some(Box::new(|_, binding, namespace, operation, _| {
                Err(format!("unexpected host call {binding}/{namespace}/{operation}").into())
            })),
        )
        .map_err(|e| format!("cannot start the waPC host: {e}"))?;
        Ok(Instance { host })
    }
}

/// Each call gets a fresh instance.
impl Guest for Module {
    fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.instance()?.call(function, payload)
    }
}

/// One instance of a module.
#[derive(Debug)]
pub struct Instance {
    host: WapcHost,
}

impl Instance {
    pub fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        self.host
            .call(function, payload)
            .map_err(|e| format!("{function} failed: {e}"))
    }
}

/// Where restage-gate's module is: `$RESTAGE_GATE_WASM`, or `policy.wasm` at the top of the
/// repository (`make policy.wasm` builds it).
pub fn policy_path() -> std::path::PathBuf {
    module_path("RESTAGE_GATE_WASM", "policy.wasm")
}

/// The module in `$var`, or at `in_repository` under the top of the repository.
pub fn module_path(var: &str, in_repository: &str) -> std::path::PathBuf {
    std::env::var_os(var).map_or_else(
        || restage_gate_release::repository::root().join(in_repository),
        std::path::PathBuf::from,
    )
}

/// The module the suites evaluate (`policy_path`), compiled once per test binary.
pub fn policy_under_test() -> &'static Module {
    static MODULE: std::sync::OnceLock<Module> = std::sync::OnceLock::new();
    MODULE.get_or_init(|| {
        Module::load(&policy_path()).unwrap_or_else(|e| {
            panic!("cannot load the policy under test ({e}); build it with `make policy.wasm`")
        })
    })
}
