//! What every command that trains needs: a subject, a provisioned environment, the store and an
//! evaluator.

use std::path::{Path, PathBuf};

use anyhow::{Context, Result};
use reprolab_core::manifest::{Config, Subject};
use std::sync::Arc;

use reprolab_exec::{EnvOptions, Evaluator, PythonEnv, RayExecutor, RayOptions};
use reprolab_store::Store;

use crate::cli::{Backend, Global};
use crate::error::Infrastructure;
use crate::progress;

pub fn env_options(g: &Global) -> EnvOptions {
    EnvOptions {
        python: g.python.clone(),
        cache_dir: None,
    }
}

/// Provision (on first use) and return the Python environment, with a spinner meanwhile.
pub async fn python_env(g: &Global) -> Result<PythonEnv> {
    let opts = env_options(g);
    blocking_with_spinner("python env", g.json, move |progress| {
        reprolab_exec::env::ensure(&opts, progress)
    })
    .await
    .context(Infrastructure("preparing the Python environment"))?
    .context("preparing the Python environment")
}

/// Run `job` (provisioning: blocking, long on first use) off the async runtime, its progress
/// lines shown on a spinner labelled `label`.
async fn blocking_with_spinner<T: Send + 'static>(
    label: &'static str,
    json: bool,
    job: impl FnOnce(&dyn Fn(&str)) -> T + Send + 'static,
) -> Result<T, tokio::task::JoinError> {
    tokio::task::spawn_blocking(move || {
        let sp = progress::spinner(label, json);
        let result = job(&|line: &str| sp.set_message(line.to_string()));
        sp.finish_and_clear();
        result
    })
    .await
}

pub fn store_path(g: &Global) -> PathBuf {
    g.store
        .clone()
        .unwrap_or_else(|| PathBuf::from(".reprolab").join("store.db"))
}

pub fn open_store(g: &Global) -> Result<Store> {
    Ok(Store::open(&store_path(g))?)
}

pub async fn evaluator(g: &Global) -> Result<Evaluator> {
    let env = python_env(g).await?;
    let store = open_store(g)?;
    match g.backend {
        Backend::Local => {
            let workers = g.workers.unwrap_or_else(reprolab_exec::default_workers);
            Evaluator::new(env, store, workers, !g.no_cache)
                .context(Infrastructure("creating a scratch directory"))
        }
        Backend::Ray => {
            let ray = ray_executor(g, &env).await?;
            Ok(Evaluator::with_executor(
                Arc::new(ray),
                env,
                store,
                !g.no_cache,
            ))
        }
    }
}

/// Install Ray on first use and start the driver (joining --ray-address, else a local head),
/// with a spinner meanwhile; failures are infrastructure errors (exit 3).
pub async fn ray_executor(g: &Global, env: &PythonEnv) -> Result<RayExecutor> {
    ensure_ray(g, env).await?;
    let opts = RayOptions {
        address: g.ray_address.clone(),
        slots: g.workers,
    };
    let sp = progress::spinner("ray", g.json);
    sp.set_message(match &opts.address {
        Some(a) => format!("joining the Ray cluster at {a} and starting evaluation slots"),
        None => "starting a local Ray head and evaluation slots".into(),
    });
    let ray = RayExecutor::start(env, &opts).await;
    sp.finish_and_clear();
    let ray = ray.context(Infrastructure("starting the Ray backend"))?;
    let c = &ray.cluster;
    tracing::info!(
        "Ray backend: {} on {} ({} node(s)), ready in {:.1} s",
        crate::plural::count(c.slots, "slot"),
        c.address,
        c.nodes,
        c.start_s
    );
    Ok(ray)
}

/// Make Ray importable in the environment (installed on first use), with a spinner meanwhile.
pub async fn ensure_ray(g: &Global, env: &PythonEnv) -> Result<()> {
    let installing = env.clone();
    blocking_with_spinner("ray", g.json, move |progress| {
        reprolab_exec::env::ensure_ray(&installing, progress)
    })
    .await
    .context(Infrastructure("installing Ray"))?
    .context(Infrastructure("installing Ray"))
}

/// Make TensorFlow importable in the environment (installed on first use), with a spinner
/// meanwhile (an evaluation that needs it installs it too, without the spinner).
pub async fn ensure_tensorflow(g: &Global, env: &PythonEnv) -> Result<()> {
    let installing = env.clone();
    blocking_with_spinner("tensorflow", g.json, move |progress| {
        reprolab_exec::env::ensure_tensorflow(&installing, progress)
    })
    .await
    .context(Infrastructure("installing TensorFlow"))?
    .context(Infrastructure("installing TensorFlow"))
}

pub fn load_subject(path: &Path) -> Result<Subject> {
    Ok(Subject::load(path)?)
}

/// The config from `--config FILE` (validated against the space) or the subject's own.
pub fn load_config(subject: &Subject, path: Option<&Path>) -> Result<(Config, PathBuf)> {
    match path {
        Some(p) => Ok((subject.load_config(p)?, p.to_path_buf())),
        None => Ok((subject.config.clone(), subject.config_path.clone())),
    }
}
