//! The WASI preview 1 calls restage-gate's module imports (`wasm-objdump -x -j Import
//! policy.wasm`), with what the wasmtime host gives it: no environment, the host's clocks, the
//! host's randomness, and stdout/stderr passed through.

use std::io::Write;
use std::sync::OnceLock;
use std::time::{Instant, SystemTime, UNIX_EPOCH};

use wasmi::{Caller, Error, Linker};

use super::{read, write, Invocation};

const WASI: &str = "wasi_snapshot_preview1";

// errno values of WASI preview 1
const SUCCESS: i32 = 0;
const BADF: i32 = 8;
const FAULT: i32 = 21;
const INVAL: i32 = 28;
const IO: i32 = 29;

// clock ids
const REALTIME: i32 = 0;
const MONOTONIC: i32 = 1;

type Host<'a> = Caller<'a, Invocation>;

/// An errno for a call whose guest pointers were out of bounds.
fn errno(result: Result<(), String>) -> i32 {
    result.map_or(FAULT, |()| SUCCESS)
}

pub(super) fn add_to_linker(linker: &mut Linker<Invocation>) -> Result<(), Error> {
    linker.func_wrap(
        WASI,
        "random_get",
        |mut caller: Host<'_>, buf: i32, len: i32| -> i32 {
            let mut bytes = vec![0; len as u32 as usize];
            if getrandom::fill(&mut bytes).is_err() {
                return IO;
            }
            errno(write(&mut caller, buf, &bytes))
        },
    )?;
    // An empty environment, as the wasmtime host is configured.
    linker.func_wrap(
        WASI,
        "environ_sizes_get",
        |mut caller: Host<'_>, count_ptr: i32, size_ptr: i32| -> i32 {
            errno(
                write(&mut caller, count_ptr, &0u32.to_le_bytes())
                    .and_then(|()| write(&mut caller, size_ptr, &0u32.to_le_bytes())),
            )
        },
    )?;
    linker.func_wrap(
        WASI,
        "environ_get",
        |_: Host<'_>, _environ: i32, _buf: i32| -> i32 { SUCCESS },
    )?;
    linker.func_wrap(
        WASI,
        "clock_time_get",
        |mut caller: Host<'_>, id: i32, _precision: i64, time_ptr: i32| -> i32 {
            let nanos = match id {
                REALTIME => SystemTime::now()
                    .duration_since(UNIX_EPOCH)
                    .map_or(0, |d| d.as_nanos()),
                MONOTONIC => {
                    static START: OnceLock<Instant> = OnceLock::new();
                    START.get_or_init(Instant::now).elapsed().as_nanos()
                }
                _ => return INVAL,
            };
            let nanos = u64::try_from(nanos).unwrap_or(u64::MAX);
            errno(write(&mut caller, time_ptr, &nanos.to_le_bytes()))
        },
    )?;
    linker.func_wrap(
        WASI,
        "fd_write",
        |mut caller: Host<'_>, fd: i32, iovs: i32, iovs_len: i32, written_ptr: i32| -> i32 {
            let bytes = match gather(&caller, iovs, iovs_len) {
                Ok(bytes) => bytes,
                Err(_) => return FAULT,
            };
            let sent = match fd {
                1 => std::io::stdout().write_all(&bytes),
                2 => std::io::stderr().write_all(&bytes),
                _ => return BADF,
            };
            if sent.is_err() {
                return IO;
            }
            let written = u32::try_from(bytes.len()).unwrap_or(u32::MAX);
            errno(write(&mut caller, written_ptr, &written.to_le_bytes()))
        },
    )?;
    linker.func_wrap(
        WASI,
        "proc_exit",
        |_: Host<'_>, status: i32| -> Result<(), Error> { Err(Error::i32_exit(status)) },
    )?;
    Ok(())
}

/// The bytes of `iovs_len` iovecs (`{buf: u32, buf_len: u32}`, little-endian) at `iovs`.
fn gather(caller: &Host<'_>, iovs: i32, iovs_len: i32) -> Result<Vec<u8>, String> {
    let table_len = i32::try_from(i64::from(iovs_len as u32) * 8).map_err(|e| e.to_string())?;
    let table = read(caller, iovs, table_len)?;
    let mut bytes = Vec::new();
    for iovec in table.chunks_exact(8) {
        let field = |at: usize| {
            i32::from_le_bytes([iovec[at], iovec[at + 1], iovec[at + 2], iovec[at + 3]])
        };
        bytes.extend(read(caller, field(0), field(4))?);
    }
    Ok(bytes)
}
