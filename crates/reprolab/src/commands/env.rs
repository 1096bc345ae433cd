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
    if a.tensorflow {
        context::ensure_tensorflow(g, &env).await?;
        println!("{}", env.python.display());
        return Ok(ExitCode::SUCCESS);
    }
    if a.ray {
        context::ensure_ray(g, &env).await?;
        println!("{}", env.python.with_file_name("ray").display());
        return Ok(ExitCode::SUCCESS);
    }
    let status = reprolab_exec::env::status(&context::env_options(g));
    let isolation = reprolab_exec::sandbox::isolation();
    let workers = g.workers.unwrap_or_else(reprolab_exec::default_workers);
    if g.json {
        let out = json!({
            "python": env.python, "python_version": env.python_version, "managed": env.root.is_some(),
            "root": env.root, "env_id": env.id, "lock_hash": status.lock_hash, "package_hash": status.package_hash,
            "uv": status.uv, "cache_dir": reprolab_exec::env::cache_dir(), "network_isolation": isolation.network,
            "sandbox": isolation, "sandbox_gaps": isolation.gaps(),
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
        let yes_no =
            |on: bool, yes: &str, no: &str| if on { yes.to_string() } else { no.to_string() };
        println!(
            "network       {}",
            yes_no(
                isolation.network,
                "cut off: user code runs in a network namespace with no interface up",
                "reachable: `unshare -rn` is not permitted here"
            )
        );
        println!(
            "processes     {}",
            yes_no(
                isolation.pid_namespace,
                "a PID namespace per worker: everything user code starts dies with it",
                "no PID namespace: workers reap and kill what evaluations leave (subreaper)"
            )
        );
        println!(
            "files         {}",
            if isolation.landlock_abi >= 1 {
                format!(
                    "Landlock ABI {}: user code writes only its scratch directory{}{}",
                    isolation.landlock_abi,
                    if isolation.landlock_abi >= 6 {
                        "; cannot signal outside its sandbox"
                    } else {
                        ""
                    },
                    if isolation.unix_sockets {
                        "; Unix sockets outside it unreachable"
                    } else {
                        ""
                    }
                )
            } else {
                "no Landlock: user code can write wherever the user can".to_string()
            }
        );
        for gap in isolation.gaps() {
            println!("not confined  {gap}");
        }
        println!(
            "credentials   scrubbed: subject code sees no *_KEY, *_TOKEN, *SECRET*, AWS_* variables"
        );
        println!("workers       {workers} (one intra-op thread each)");
        println!("store         {}", context::store_path(g).display());
        println!("env id        {}", env.id);
    }
    Ok(ExitCode::SUCCESS)
}
