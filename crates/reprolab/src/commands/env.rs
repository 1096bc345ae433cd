//! `reprolab env`: show the managed Python environment, provisioning it if needed.

use std::process::ExitCode;

use anyhow::Result;
use serde_json::json;

use crate::cli::{EnvArgs, Global};
use crate::context;

pub async fn run(g: &Global, a: &EnvArgs) -> Result<ExitCode> {
    let env = context::python_env(g).await?;
    if a.python_path {
        println!("{}", env.python.display());
        return Ok(ExitCode::SUCCESS);
    }
    let status = reprolab_exec::env::status(&context::env_options(g));
    let isolation = reprolab_exec::sandbox::network_isolation();
    let workers = g.workers.unwrap_or_else(reprolab_exec::default_workers);
    if g.json {
        let out = json!({
            "python": env.python, "python_version": env.python_version, "managed": env.root.is_some(),
            "root": env.root, "env_id": env.id, "lock_hash": status.lock_hash, "package_hash": status.package_hash,
            "uv": status.uv, "cache_dir": reprolab_exec::env::cache_dir(), "network_isolation": isolation,
            "credentials_scrubbed": true, "workers": workers, "store": context::store_path(g),
        });
        println!("{}", serde_json::to_string_pretty(&out)?);
    } else {
        println!(
            "python        {} (Python {})",
            env.python.display(),
            env.python_version
        );
        match &env.root {
            Some(root) => println!(
                "environment   managed, {} (lock {})",
                root.display(),
                status.lock_hash
            ),
            None => {
                println!("environment   external interpreter (--python); package on PYTHONPATH")
            }
        }
        println!(
            "package       reprolab python package {}",
            status.package_hash
        );
        println!(
            "uv            {}",
            status
                .uv
                .as_deref()
                .unwrap_or("not found (venv + pip fallback)")
        );
        println!(
            "isolation     {}",
            if isolation {
                "active: subject code runs in a network namespace with no network"
            } else {
                "inactive: `unshare -rn` is not permitted here; subject code can reach the network"
            }
        );
        println!(
            "credentials   scrubbed: subject code sees no *_KEY, *_TOKEN, *SECRET*, AWS_* variables"
        );
        println!("workers       {workers} (one intra-op thread each)");
        println!("store         {}", context::store_path(g).display());
        println!("env id        {}", env.id);
    }
    Ok(ExitCode::SUCCESS)
}
