//! `restage-gate-demo`: what `make demo` prints, and `make check-settings`.
//!
//!     restage-gate-demo [--kwctl KWCTL] MODULE.wasm REQUESTS-DIR
//!     restage-gate-demo check-settings [--kwctl KWCTL --request REQUEST.json] MODULE.wasm POLICY.yaml
//!
//! With `--kwctl`, kwctl evaluates (`kwctl run`, on the annotated module); otherwise the
//! module runs in this crate's waPC host on the wasmi interpreter. `check-settings` checks the
//! settings of every policy in POLICY.yaml; kwctl checks them on its way to evaluating
//! REQUEST.json.

use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;

use restage_gate_demo::kwctl::Kwctl;
use restage_gate_demo::Runner;

const USAGE: &str = "usage: restage-gate-demo [--kwctl KWCTL] MODULE.wasm REQUESTS-DIR\n       \
restage-gate-demo check-settings [--kwctl KWCTL --request REQUEST.json] MODULE.wasm POLICY.yaml";

struct Args {
    check_settings: bool,
    kwctl: Option<OsString>,
    request: Option<PathBuf>,
    module: PathBuf,
    /// REQUESTS-DIR, or POLICY.yaml for `check-settings`.
    input: PathBuf,
}

fn parse_args() -> Result<Args, String> {
    let mut args = std::env::args_os().skip(1).peekable();
    let check_settings = args.next_if(|a| a == "check-settings").is_some();
    let mut kwctl = None;
    let mut request = None;
    let mut paths = Vec::new();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--kwctl") => kwctl = Some(args.next().ok_or("--kwctl needs a program")?),
            Some("--request") if check_settings => {
                request = Some(PathBuf::from(args.next().ok_or("--request needs a file")?))
            }
            Some("-h" | "--help") => return Err(USAGE.into()),
            Some(flag) if flag.starts_with("--") => {
                return Err(format!("unknown flag {flag}\n{USAGE}"))
            }
            _ => paths.push(PathBuf::from(arg)),
        }
    }
    let [module, input] = <[PathBuf; 2]>::try_from(paths).map_err(|_| USAGE.to_string())?;
    Ok(Args {
        check_settings,
        kwctl,
        request,
        module,
        input,
    })
}

fn run() -> Result<(), String> {
    let args = parse_args()?;
    if args.check_settings {
        let (runner, request) = match (args.kwctl, args.request) {
            (Some(program), Some(request)) => (
                Runner::Kwctl(Kwctl {
                    program,
                    module: args.module,
                }),
                request,
            ),
            (Some(_), None) => {
                return Err(format!(
                    "--kwctl needs --request REQUEST.json: kwctl checks settings on its way to \
                     evaluating a request\n{USAGE}"
                ))
            }
            (None, _) => (interpreter(args.module)?, PathBuf::new()),
        };
        return restage_gate_demo::check_settings::check(
            &runner,
            &args.input,
            &request,
            &mut std::io::stdout().lock(),
        );
    }
    let runner = match args.kwctl {
        Some(program) => {
            println!(
                "restage-gate on the bundled requests, evaluated by {} (`kwctl run`).",
                program.to_string_lossy()
            );
            Runner::Kwctl(Kwctl {
                program,
                module: args.module,
            })
        }
        None => {
            println!(
                "restage-gate on the bundled requests, evaluated by a small waPC host on the \
                 wasmi interpreter\n(`make demo` uses kwctl instead when it is installed; `make \
                 test` checks that this host answers\nas wasmtime, the runtime of kwctl and \
                 policy-server, does)."
            );
            interpreter(args.module)?
        }
    };
    restage_gate_demo::show(&runner, &args.input, &mut std::io::stdout().lock())
}

#[cfg(feature = "interpreter")]
fn interpreter(module: PathBuf) -> Result<Runner, String> {
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
