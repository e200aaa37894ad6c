//! The waPC host functions (module `wapc`), as `wasmtime-provider` defines them. restage-gate
//! asks the host for nothing, so a `__host_call` fails, as in the wasmtime host of the suites.

use wasmi::{Caller, Error, Linker};

use super::{read, write, Invocation};

const WAPC: &str = "wapc";

type Host<'a> = Caller<'a, Invocation>;

fn trap(message: String) -> Error {
    Error::new(message)
}

pub(super) fn add_to_linker(linker: &mut Linker<Invocation>) -> Result<(), Error> {
    linker.func_wrap(
        WAPC,
        "__guest_request",
        |mut caller: Host<'_>, op_ptr: i32, ptr: i32| -> Result<(), Error> {
            let payload = caller.data().payload.clone();
            let operation = caller.data().operation.clone();
            write(&mut caller, ptr, &payload).map_err(trap)?;
            write(&mut caller, op_ptr, &operation).map_err(trap)
        },
    )?;
    linker.func_wrap(
        WAPC,
        "__guest_response",
        |mut caller: Host<'_>, ptr: i32, len: i32| -> Result<(), Error> {
            caller.data_mut().response = Some(read(&caller, ptr, len).map_err(trap)?);
            Ok(())
        },
    )?;
    linker.func_wrap(
        WAPC,
        "__guest_error",
        |mut caller: Host<'_>, ptr: i32, len: i32| -> Result<(), Error> {
            let bytes = read(&caller, ptr, len).map_err(trap)?;
            caller.data_mut().error = Some(String::from_utf8_lossy(&bytes).into_owned());
            Ok(())
        },
    )?;
    linker.func_wrap(
        WAPC,
        "__host_call",
        |mut caller: Host<'_>,
         bd_ptr: i32,
         bd_len: i32,
         ns_ptr: i32,
         ns_len: i32,
         op_ptr: i32,
         op_len: i32,
         _ptr: i32,
         _len: i32|
         -> Result<i32, Error> {
            let text = |ptr, len| {
                read(&caller, ptr, len).map(|b| String::from_utf8_lossy(&b).into_owned())
            };
            let binding = text(bd_ptr, bd_len).map_err(trap)?;
            let namespace = text(ns_ptr, ns_len).map_err(trap)?;
            let operation = text(op_ptr, op_len).map_err(trap)?;
            caller.data_mut().host_error = Some(format!(
                "unexpected host call {binding}/{namespace}/{operation}"
            ));
            Ok(0)
        },
    )?;
    // No host call succeeds, so there is never a host response to hand over.
    linker.func_wrap(WAPC, "__host_response", |_: Host<'_>, _ptr: i32| {})?;
    linker.func_wrap(WAPC, "__host_response_len", |_: Host<'_>| 0i32)?;
    linker.func_wrap(
        WAPC,
        "__host_error",
        |mut caller: Host<'_>, ptr: i32| -> Result<(), Error> {
            let message = caller.data().host_error.clone().unwrap_or_default();
            write(&mut caller, ptr, message.as_bytes()).map_err(trap)
        },
    )?;
    linker.func_wrap(WAPC, "__host_error_len", |caller: Host<'_>| -> i32 {
        let len = caller.data().host_error.as_ref().map_or(0, String::len);
        i32::try_from(len).unwrap_or(i32::MAX)
    })?;
    // wasmtime-provider hands guest log lines to `tracing`, which the suites do not subscribe
    // to; the demo drops them too.
    linker.func_wrap(
        WAPC,
        "__console_log",
        |_: Host<'_>, _ptr: i32, _len: i32| {},
    )?;
    Ok(())
}
