//! `listwatch-conformance`: runs the LIST/WATCH conformance checks against a server and prints
//! the report (as text, JSON or JUnit XML, to stdout or a file); exits 1 when a check failed, 2
//! when the run could not start or its report could not be written.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Parser;
use listwatch_conformance::{OutputFormat, Resource, Target, TlsOptions, all_checks, run};

#[derive(Parser, Debug)]
#[command(
    about = "LIST/WATCH protocol conformance checks against a Kubernetes apiserver (listwatch or kube-apiserver)"
)]
struct Args {
    /// The server's base URL, e.g. http://127.0.0.1:8080 (overrides the kubeconfig's).
    #[arg(long, required_unless_present_any = ["kubeconfig", "list"])]
    server: Option<String>,
    /// Take the server URL, credentials (a token, a token file or an exec plugin) and TLS material from this kubeconfig's current context.
    #[arg(long)]
    kubeconfig: Option<PathBuf>,
    /// Trust this PEM CA bundle for an https server (instead of the kubeconfig's CA, or the public roots).
    #[arg(long, value_name = "PATH")]
    certificate_authority: Option<PathBuf>,
    /// Do not verify an https server's certificate (verification is on otherwise, whatever the kubeconfig says).
    #[arg(long, conflicts_with = "certificate_authority")]
    insecure_skip_tls_verify: bool,
    /// Bearer token (overrides the kubeconfig's).
    #[arg(long, env = "LISTWATCH_CONFORMANCE_TOKEN", hide_env_values = true)]
    token: Option<String>,
    /// Run only these checks (repeatable); every check by default.
    #[arg(long = "check", value_name = "NAME")]
    checks: Vec<String>,
    /// The server has listwatch's debug API (/debug/listwatch/*): force compaction and cache resets.
    #[arg(long)]
    debug_api: bool,
    /// The resource every check works on: configmaps, or custom (a ConfigMap-shaped custom resource, conformanceblobs.conformance.listwatch.dev, whose CRD the run installs or finds first and leaves in place).
    #[arg(long, value_enum, default_value_t = Resource::ConfigMaps)]
    resource: Resource,
    /// With --resource custom: delete the CRD after the run (and wait until it is gone).
    #[arg(long)]
    delete_crd: bool,
    /// The namespace to create, use and delete [default: a fresh lwconf-… name].
    #[arg(long)]
    namespace: Option<String>,
    /// List the checks and exit.
    #[arg(long)]
    list: bool,
    /// How to write the report: text for people, json, or junit (JUnit XML for CI).
    #[arg(long, value_enum, default_value_t = OutputFormat::Text)]
    output: OutputFormat,
    /// Write the report (in --output's format) to this file; stdout then shows the text report.
    #[arg(long, value_name = "PATH")]
    output_file: Option<PathBuf>,
}

#[tokio::main]
async fn main() -> ExitCode {
    let args = Args::parse();
    let checks = all_checks();
    if args.list {
        for check in &checks {
            println!("{:<44} {:<8} {}", check.name, check.section, check.summary);
        }
        return ExitCode::SUCCESS;
    }
    if let Some(unknown) = args.checks.iter().find(|n| !checks.iter().any(|c| c.name == n.as_str())) {
        eprintln!("no check is named {unknown:?}; --list shows them");
        return ExitCode::from(2);
    }
    let target = match &args.kubeconfig {
        Some(path) => Target::from_kubeconfig_with_server(path, args.server.as_deref()),
        None => Target::new(args.server.as_deref().unwrap_or_default()),
    };
    let certificate_authority = match &args.certificate_authority {
        Some(path) => match std::fs::read(path) {
            Ok(pem) => Some(pem),
            Err(e) => {
                eprintln!("reading --certificate-authority {}: {e}", path.display());
                return ExitCode::from(2);
            }
        },
        None => None,
    };
    let tls = TlsOptions { certificate_authority, insecure_skip_tls_verify: args.insecure_skip_tls_verify };
    let mut target = match target.and_then(|target| target.with_tls(&tls)) {
        Ok(target) => {
            target.with_debug_api(args.debug_api).with_resource(args.resource).with_crd_deleted(args.delete_crd)
        }
        Err(e) => {
            eprintln!("{e}");
            return ExitCode::from(2);
        }
    };
    if let Some(token) = args.token {
        target = target.with_token(token);
    }
    if let Some(namespace) = args.namespace {
        target = target.with_namespace(namespace);
    }
    if let Some(tls) = target.tls_description() {
        eprintln!("{tls}");
    }
    if let Err(e) = target.preflight().await {
        eprintln!("{e}");
        return ExitCode::from(2);
    }
    eprintln!(
        "running against {} on {} in namespace {}",
        target.base_url,
        target.resource.qualified(),
        target.namespace
    );
    let report = run(&target, &args.checks).await;
    match &args.output_file {
        Some(path) => {
            if let Err(e) = std::fs::write(path, report.render(args.output)) {
                eprintln!("writing the report to {}: {e}", path.display());
                println!("{report}");
                return ExitCode::from(2);
            }
            println!("{report}");
        }
        None => print!("{}", report.render(args.output)),
    }
    if report.all_passed() { ExitCode::SUCCESS } else { ExitCode::from(1) }
}
