//! `restage-gate-demo`: what `make demo` prints.
//!
//!     restage-gate-demo [--kwctl KWCTL] MODULE.wasm REQUESTS-DIR
//!
//! With `--kwctl`, kwctl evaluates (`kwctl run`, on the annotated module); otherwise the
//! module runs in this crate's waPC host on the wasmi interpreter.

use std::path::PathBuf;
use std::process::ExitCode;

use restage_gate_demo::kwctl::Kwctl;
use restage_gate_demo::Runner;

const USAGE: &str = "usage: restage-gate-demo [--kwctl KWCTL] MODULE.wasm REQUESTS-DIR";

fn run() -> Result<(), String> {
    let mut args = std::env::args_os().skip(1);
    let mut kwctl = None;
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--kwctl") => kwctl = Some(args.next().ok_or("--kwctl needs a program")?),
            Some("-h" | "--help") => return Err(USAGE.into()),
            Some(flag) if flag.starts_with("--") => {
                return Err(format!("unknown flag {flag}\n{USAGE}"))
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let [module, requests] = <[PathBuf; 2]>::try_from(paths).map_err(|_| USAGE.to_string())?;
    let runner = match kwctl {
        Some(program) => {
            println!(
                "restage-gate on the bundled requests, evaluated by {} (`kwctl run`).",
                program.to_string_lossy()
            );
            Runner::Kwctl(Kwctl { program, module })
        }
        None => interpreter(module)?,
    };
    restage_gate_demo::show(&runner, &requests, &mut std::io::stdout().lock())
}

#[cfg(feature = "interpreter")]
fn interpreter(module: PathBuf) -> Result<Runner, String> {
    println!(
        "restage-gate on the bundled requests, evaluated by a small waPC host on the wasmi \
         interpreter\n(`make demo` uses kwctl instead when it is installed; `make test` checks \
         that this host answers\nas wasmtime, the runtime of kwctl and policy-server, does)."
    );
    Ok(Runner::Interpreter(
        restage_gate_demo::interpreter::Module::load(&module)?,
    ))
}

#[cfg(not(feature = "interpreter"))]
fn interpreter(_: PathBuf) -> Result<Runner, String> {
    Err(format!(
        "built without the interpreter (feature `interpreter`): pass --kwctl\n{USAGE}"
    ))
}

fn main() -> ExitCode {
    match run() {
        Ok(()) => ExitCode::SUCCESS,
        Err(message) => {
            eprintln!("restage-gate-demo: {message}");
            ExitCode::FAILURE
        }
    }
}
