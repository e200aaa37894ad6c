//! A small waPC host on the wasmi interpreter, for `make demo` on machines without kwctl: it
//! builds in a fraction of the time wasmtime takes. It provides what the wasmtime host of the
//! test suites provides (the waPC host functions and the WASI preview 1 calls restage-gate
//! imports), and `make test` checks that both answer every bundled request alike.

mod wapc;
mod wasi;

use std::path::Path;

use restage_gate_evaluation::guest::Guest;
use wasmi::{Caller, Engine, Extern, Linker, Memory, Module as WasmModule, Store};

/// The state of one waPC call, as the host functions see it.
struct Invocation {
    operation: Vec<u8>,
    payload: Vec<u8>,
    response: Option<Vec<u8>>,
    error: Option<String>,
    host_error: Option<String>,
}

/// A module compiled for the interpreter; every call gets a fresh instance, as in the wasmtime
/// host.
pub struct Module {
    engine: Engine,
    module: WasmModule,
    linker: Linker<Invocation>,
}

impl std::fmt::Debug for Module {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("interpreter::Module")
    }
}

impl Module {
    pub fn load(path: &Path) -> Result<Self, String> {
        let bytes = std::fs::read(path).map_err(|e| format!("{}: {e}", path.display()))?;
        Self::from_bytes(&bytes).map_err(|e| format!("{}: {e}", path.display()))
    }

    pub fn from_bytes(bytes: &[u8]) -> Result<Self, String> {
        let engine = Engine::default();
        let module = WasmModule::new(&engine, bytes)
            .map_err(|e| format!("cannot compile the module: {e}"))?;
        let mut linker = Linker::new(&engine);
        wapc::add_to_linker(&mut linker).map_err(|e| e.to_string())?;
        wasi::add_to_linker(&mut linker).map_err(|e| e.to_string())?;
        Ok(Module {
            engine,
            module,
            linker,
        })
    }
}

/// waPC's call sequence: instantiate, run `_start` and `wapc_init` when exported (a WASI exit
/// with status 0 is a normal end), then `__guest_call(operation length, payload length)`, which
/// answers 1 with `__guest_response` or 0 with `__guest_error`.
impl Guest for Module {
    fn call(&self, function: &str, payload: &[u8]) -> Result<Vec<u8>, String> {
        let mut store = Store::new(
            &self.engine,
            Invocation {
                operation: function.as_bytes().to_vec(),
                payload: payload.to_vec(),
                response: None,
                error: None,
                host_error: None,
            },
        );
        let instance = self
            .linker
            .instantiate_and_start(&mut store, &self.module)
            .map_err(|e| format!("cannot instantiate the module: {e}"))?;
        for start in ["_start", "wapc_init"] {
            let Some(init) = instance.get_func(&store, start) else {
                continue;
            };
            let ended = init
                .typed::<(), ()>(&store)
                .and_then(|init| init.call(&mut store, ()));
            match ended {
                Err(e) if e.i32_exit_status() != Some(0) => {
                    return Err(format!("the module's {start} failed: {e}"))
                }
                _ => {}
            }
        }
        let guest_call = instance
            .get_typed_func::<(i32, i32), i32>(&store, "__guest_call")
            .map_err(|_| "the module exports no __guest_call: not a waPC guest".to_string())?;
        let lengths = (length(function.len())?, length(payload.len())?);
        let result = guest_call.call(&mut store, lengths);
        let invocation = store.into_data();
        let answer = match result {
            Err(trap) => Err(trap.to_string()),
            Ok(0) => Err(invocation
                .error
                .unwrap_or_else(|| "no error message set for call failure".into())),
            Ok(_) => invocation.response.ok_or_else(|| {
                invocation
                    .error
                    .unwrap_or_else(|| "no error message or response set for call success".into())
            }),
        };
        answer.map_err(|e| format!("{function} failed: {e}"))
    }
}

fn length(len: usize) -> Result<i32, String> {
    i32::try_from(len).map_err(|_| format!("{len} bytes do not fit a waPC call"))
}

fn memory(caller: &Caller<'_, Invocation>) -> Result<Memory, String> {
    caller
        .get_export("memory")
        .and_then(Extern::into_memory)
        .ok_or_else(|| "the module exports no memory".to_string())
}

/// `len` bytes of the guest's memory at `ptr` (wasm32 addresses are unsigned).
fn read(caller: &Caller<'_, Invocation>, ptr: i32, len: i32) -> Result<Vec<u8>, String> {
    let memory = memory(caller)?;
    let len = len as u32 as usize;
    if len > memory.data_size(caller) {
        return Err(format!(
            "{len} bytes at {ptr:#x}: larger than the guest's memory"
        ));
    }
    let mut bytes = vec![0; len];
    memory
        .read(caller, ptr as u32 as usize, &mut bytes)
        .map_err(|e| format!("reading {len} bytes at {ptr:#x}: {e}"))?;
    Ok(bytes)
}

fn write(caller: &mut Caller<'_, Invocation>, ptr: i32, bytes: &[u8]) -> Result<(), String> {
    memory(caller)?
        .write(caller, ptr as u32 as usize, bytes)
        .map_err(|e| format!("writing {} bytes at {ptr:#x}: {e}", bytes.len()))
}
