//! Model specs: the `--llm` strings. `PROVIDER:MODEL[@BASE_URL]`, `replay:DIR` or
//! `local:NAME_OR_PATH`. The provider is everything before the first ':' (model names may contain
//! ':' themselves, as Ollama's `llama3.2:1b` does); `@http://...` / `@https://...` at the end
//! points the provider at another server.
//!
//! | prefix      | server (default)                                   | key                        |
//! |-------------|----------------------------------------------------|----------------------------|
//! | `openai`    | `$OPENAI_BASE_URL` or `https://api.openai.com/v1`  | `$OPENAI_API_KEY` (required for api.openai.com) |
//! | `ollama`    | `$OLLAMA_HOST` or `http://localhost:11434`, + `/v1` | none                      |
//! | `vllm`      | `http://localhost:8000/v1`                         | `$VLLM_API_KEY` if set     |
//! | `lmstudio`  | `http://localhost:1234/v1`                         | none                       |
//! | `llamacpp`  | `http://localhost:8080/v1`                         | none                       |
//! | `anthropic` | `$ANTHROPIC_BASE_URL` or `https://api.anthropic.com` | `$ANTHROPIC_API_KEY` (required) |
//!
//! Providers named in the config file (`[providers.NAME]`) come first, so a config can also
//! redefine the built-in prefixes.

use std::path::PathBuf;

use crate::LlmError;
use crate::anthropic::ANTHROPIC_BASE_URL;
use crate::config::{LlmConfig, ProviderKind};
use crate::endpoint::Endpoint;
use crate::price::Price;
use crate::secret::Secret;

/// What a spec resolved to.
#[derive(Debug, Clone)]
pub enum Spec {
    /// Any OpenAI-compatible chat-completions server.
    OpenAi(Endpoint),
    /// Anthropic's Messages API.
    Anthropic(Endpoint),
    /// Answers from the recordings in a directory.
    Replay(PathBuf),
    /// An embedded local model; the binary supplies the factory (see [`crate::build`]).
    Local(String),
}

impl Spec {
    /// `provider:model`, `replay:DIR` or `local:NAME`.
    pub fn name(&self) -> String {
        match self {
            Spec::OpenAi(e) | Spec::Anthropic(e) => e.name(),
            Spec::Replay(dir) => format!("replay:{}", dir.display()),
            Spec::Local(n) => format!("local:{n}"),
        }
    }
}

/// The built-in OpenAI-compatible prefixes: (name, default base URL, key variable).
const OPENAI_LIKE: &[(&str, &str, Option<&str>)] = &[
    (
        "openai",
        "https://api.openai.com/v1",
        Some("OPENAI_API_KEY"),
    ),
    ("ollama", "http://localhost:11434/v1", None),
    ("vllm", "http://localhost:8000/v1", Some("VLLM_API_KEY")),
    ("lmstudio", "http://localhost:1234/v1", None),
    ("llamacpp", "http://localhost:8080/v1", None),
];

const KNOWN: &str = "openai, ollama, vllm, lmstudio, llamacpp, anthropic, replay, local";

/// Resolves `spec` with the process environment and no config file.
pub fn parse_spec(spec: &str) -> Result<Spec, LlmError> {
    parse_spec_with(spec, &LlmConfig::default(), &process_env)
}

/// The process environment, with empty variables treated as unset.
pub fn process_env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.trim().is_empty())
}

/// Resolves `spec` against a config file and an environment lookup (tests pass their own).
pub fn parse_spec_with(
    spec: &str,
    cfg: &LlmConfig,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Spec, LlmError> {
    let spec = spec.trim();
    let (provider, rest) = match spec.split_once(':') {
        Some((p, r)) => (p, r),
        None if cfg.providers.contains_key(spec) => (spec, ""),
        None => {
            return Err(LlmError::Config(format!(
                "LLM spec {spec:?} has no provider; expected PROVIDER:MODEL, e.g. \
                 openai:gpt-4o-mini, ollama:llama3.2, anthropic:claude-3-5-haiku-latest or \
                 replay:DIR (providers: {KNOWN})"
            )));
        }
    };
    let (model, url) = split_url(rest);
    match provider {
        "replay" if !cfg.providers.contains_key("replay") => {
            if rest.is_empty() {
                return Err(LlmError::Config(
                    "replay spec needs a directory: replay:DIR".into(),
                ));
            }
            return Ok(Spec::Replay(PathBuf::from(rest)));
        }
        "local" if !cfg.providers.contains_key("local") => {
            if rest.is_empty() {
                return Err(LlmError::Config(
                    "local spec needs a model name or GGUF path: local:NAME_OR_PATH".into(),
                ));
            }
            return Ok(Spec::Local(rest.to_string()));
        }
        _ => {}
    }
    if let Some(p) = cfg.providers.get(provider) {
        let model = if model.is_empty() {
            p.model.clone().ok_or_else(|| {
                LlmError::Config(format!(
                    "LLM spec {spec:?} names no model and [providers.{provider}] in the config \
                     has no `model`; write {provider}:MODEL"
                ))
            })?
        } else {
            model.to_string()
        };
        let base = url
            .map(str::to_string)
            .or_else(|| p.base_url.clone())
            .or_else(|| builtin_base(provider, p.kind, env));
        let Some(base) = base else {
            return Err(LlmError::Config(format!(
                "[providers.{provider}] in the LLM config has no base_url; add one, e.g. \
                 base_url = \"http://localhost:8000/v1\""
            )));
        };
        let key = match &p.api_key_env {
            Some(var) => Some(env(var).map(Secret::new).ok_or_else(|| {
                LlmError::Config(format!(
                    "provider {provider} reads its API key from ${var}, which is not set; \
                     export {var}=..."
                ))
            })?),
            None => None,
        };
        let price = p.price().or_else(|| price(cfg, &model, &base));
        let ep = Endpoint::new(provider, &model, &base)
            .with_key(key)
            .with_price(price);
        return Ok(match p.kind {
            ProviderKind::Openai => Spec::OpenAi(ep),
            ProviderKind::Anthropic => {
                if ep.api_key.is_none() {
                    return Err(LlmError::Config(format!(
                        "[providers.{provider}] is an Anthropic provider without api_key_env; \
                         add api_key_env = \"ANTHROPIC_API_KEY\""
                    )));
                }
                Spec::Anthropic(ep)
            }
        });
    }
    if model.is_empty() {
        return Err(LlmError::Config(format!(
            "LLM spec {spec:?} names no model; expected {provider}:MODEL"
        )));
    }
    if provider == "anthropic" {
        let key = env("ANTHROPIC_API_KEY").ok_or_else(|| {
            LlmError::Config(
                "anthropic:MODEL needs an API key: set the environment variable \
                 ANTHROPIC_API_KEY (or use a [providers] entry with api_key_env in --llm-config)"
                    .into(),
            )
        })?;
        let base = url
            .map(str::to_string)
            .or_else(|| builtin_base("anthropic", ProviderKind::Anthropic, env))
            .unwrap_or_else(|| ANTHROPIC_BASE_URL.to_string());
        let price = price(cfg, model, &base);
        return Ok(Spec::Anthropic(
            Endpoint::new("anthropic", model, &base)
                .with_key(Some(Secret::new(key)))
                .with_price(price),
        ));
    }
    let Some(&(_, _, key_var)) = OPENAI_LIKE.iter().find(|(p, _, _)| *p == provider) else {
        return Err(LlmError::Config(format!(
            "unknown LLM provider {provider:?} in spec {spec:?}; known: {KNOWN}, or a \
             [providers.NAME] entry of --llm-config"
        )));
    };
    let base = url
        .map(str::to_string)
        .or_else(|| builtin_base(provider, ProviderKind::Openai, env))
        .expect("every built-in provider has a default base URL");
    let key = key_var.and_then(env);
    if provider == "openai" && key.is_none() && base.contains("api.openai.com") {
        return Err(LlmError::Config(
            "openai:MODEL talks to api.openai.com, which needs an API key: set the environment \
             variable OPENAI_API_KEY (or point at a compatible server with OPENAI_BASE_URL or \
             openai:MODEL@http://host:port/v1)"
                .into(),
        ));
    }
    let price = price(cfg, model, &base);
    Ok(Spec::OpenAi(
        Endpoint::new(provider, model, &base)
            .with_key(key.map(Secret::new))
            .with_price(price),
    ))
}

/// Splits `MODEL@http(s)://...` into the model and the URL.
fn split_url(rest: &str) -> (&str, Option<&str>) {
    for marker in ["@http://", "@https://"] {
        if let Some(i) = rest.rfind(marker) {
            return (&rest[..i], Some(&rest[i + 1..]));
        }
    }
    (rest, None)
}

/// The default server of a built-in provider, from its environment variable when set.
fn builtin_base(
    provider: &str,
    kind: ProviderKind,
    env: &dyn Fn(&str) -> Option<String>,
) -> Option<String> {
    match (provider, kind) {
        ("openai", ProviderKind::Openai) => env("OPENAI_BASE_URL"),
        ("ollama", ProviderKind::Openai) => env("OLLAMA_HOST").map(|h| ollama_base(&h)),
        ("anthropic", ProviderKind::Anthropic) => env("ANTHROPIC_BASE_URL"),
        _ => None,
    }
    .or_else(|| match kind {
        ProviderKind::Anthropic => Some(ANTHROPIC_BASE_URL.into()),
        ProviderKind::Openai => OPENAI_LIKE
            .iter()
            .find(|(p, _, _)| *p == provider)
            .map(|(_, b, _)| b.to_string()),
    })
}

/// `OLLAMA_HOST` is `host`, `host:port` or a URL; the OpenAI-compatible API is below `/v1`.
/// As in Ollama's own client, port 11434 is implied only when no scheme is given (a URL with a
/// scheme and no port means 80 / 443).
fn ollama_base(host: &str) -> String {
    let host = host.trim().trim_end_matches('/');
    let with_port = if host.contains("://") {
        host.to_string()
    } else if host.contains(':') && !host.ends_with(']') {
        format!("http://{host}")
    } else {
        format!("http://{host}:11434")
    };
    if with_port.ends_with("/v1") {
        with_port
    } else {
        format!("{with_port}/v1")
    }
}

/// The config or built-in price of `model`; self-hosted servers on this machine cost nothing.
fn price(cfg: &LlmConfig, model: &str, base: &str) -> Option<Price> {
    cfg.price_of(model).or_else(|| {
        let host = reqwest::Url::parse(base)
            .ok()
            .and_then(|u| u.host_str().map(str::to_string));
        matches!(
            host.as_deref(),
            Some("localhost" | "127.0.0.1" | "[::1]" | "::1")
        )
        .then_some(Price::FREE)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::path::Path;

    fn env_of(pairs: &'static [(&'static str, &'static str)]) -> impl Fn(&str) -> Option<String> {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| v.to_string())
        }
    }

    fn ep(spec: Spec) -> Endpoint {
        match spec {
            Spec::OpenAi(e) | Spec::Anthropic(e) => e,
            other => panic!("not an endpoint: {other:?}"),
        }
    }

    #[test]
    fn openai_needs_a_key_for_the_real_api() {
        let cfg = LlmConfig::default();
        let e = parse_spec_with("openai:gpt-4o-mini", &cfg, &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("OPENAI_API_KEY"), "{e}");
        let s = parse_spec_with(
            "openai:gpt-4o-mini",
            &cfg,
            &env_of(&[("OPENAI_API_KEY", "sk-x")]),
        )
        .unwrap();
        let e = ep(s);
        assert_eq!(e.base_url, "https://api.openai.com/v1");
        assert_eq!(e.api_key.unwrap().expose(), "sk-x");
        assert_eq!(e.price.unwrap().input_per_mtok, 0.15);
    }

    #[test]
    fn openai_base_url_from_env_or_spec() {
        let cfg = LlmConfig::default();
        let e = ep(parse_spec_with(
            "openai:m",
            &cfg,
            &env_of(&[("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")]),
        )
        .unwrap());
        assert_eq!(e.base_url, "http://127.0.0.1:9/v1");
        assert!(e.api_key.is_none());
        assert_eq!(e.price, Some(Price::FREE));
        let e = ep(parse_spec_with(
            "openai:org/model:7b@https://h.example/v1",
            &cfg,
            &env_of(&[]),
        )
        .unwrap());
        assert_eq!(e.model, "org/model:7b");
        assert_eq!(e.base_url, "https://h.example/v1");
        assert_eq!(e.price, None);
        assert_eq!(e.name(), "openai:org/model:7b");
    }

    #[test]
    fn local_server_aliases() {
        let cfg = LlmConfig::default();
        let none = env_of(&[]);
        let e = ep(parse_spec_with("ollama:llama3.2:1b", &cfg, &none).unwrap());
        assert_eq!(e.model, "llama3.2:1b");
        assert_eq!(e.base_url, "http://localhost:11434/v1");
        for (spec, base) in [
            ("vllm:m", "http://localhost:8000/v1"),
            ("lmstudio:m", "http://localhost:1234/v1"),
            ("llamacpp:m", "http://localhost:8080/v1"),
        ] {
            assert_eq!(
                ep(parse_spec_with(spec, &cfg, &none).unwrap()).base_url,
                base
            );
        }
        for (host, base) in [
            ("gpu-box", "http://gpu-box:11434/v1"),
            ("10.0.0.2:9999", "http://10.0.0.2:9999/v1"),
            ("https://ollama.example/", "https://ollama.example/v1"),
            ("http://h:1/v1", "http://h:1/v1"),
        ] {
            let env = move |k: &str| (k == "OLLAMA_HOST").then(|| host.to_string());
            assert_eq!(
                ep(parse_spec_with("ollama:m", &cfg, &env).unwrap()).base_url,
                base
            );
        }
    }

    #[test]
    fn anthropic_requires_its_key() {
        let cfg = LlmConfig::default();
        let e =
            parse_spec_with("anthropic:claude-3-5-haiku-latest", &cfg, &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("ANTHROPIC_API_KEY"), "{e}");
        let s = parse_spec_with(
            "anthropic:claude-3-5-haiku-latest",
            &cfg,
            &env_of(&[("ANTHROPIC_API_KEY", "k")]),
        )
        .unwrap();
        assert!(matches!(&s, Spec::Anthropic(e) if e.base_url == ANTHROPIC_BASE_URL));
        assert_eq!(ep(s).price.unwrap().input_per_mtok, 0.8);
    }

    #[test]
    fn replay_local_and_errors() {
        let cfg = LlmConfig::default();
        let none = env_of(&[]);
        assert!(
            matches!(parse_spec_with("replay:rec/dir", &cfg, &none).unwrap(), Spec::Replay(p) if p == Path::new("rec/dir"))
        );
        assert!(
            matches!(parse_spec_with("local:smollm2", &cfg, &none).unwrap(), Spec::Local(n) if n == "smollm2")
        );
        for (spec, needle) in [
            ("gpt-4o", "has no provider"),
            ("openai:", "names no model"),
            ("foo:bar", "unknown LLM provider \"foo\""),
            ("replay:", "needs a directory"),
            ("local:", "local:NAME_OR_PATH"),
        ] {
            let e = parse_spec_with(spec, &cfg, &none).unwrap_err().to_string();
            assert!(e.contains(needle), "{spec}: {e}");
        }
    }

    #[test]
    fn config_providers() {
        let cfg = LlmConfig::parse(
            r#"
[providers.together]
base_url = "https://api.together.xyz/v1"
api_key_env = "TOGETHER_API_KEY"
model = "llama-70b"
price_in_per_mtok = 0.9
[providers.ollama]
base_url = "http://gpu:11434/v1"
[providers.claude]
kind = "anthropic"
api_key_env = "MY_CLAUDE_KEY"
"#,
        )
        .unwrap();
        let e = parse_spec_with("together", &cfg, &env_of(&[])).unwrap_err();
        assert!(e.to_string().contains("$TOGETHER_API_KEY"), "{e}");
        let env = env_of(&[("TOGETHER_API_KEY", "t"), ("MY_CLAUDE_KEY", "c")]);
        let e = ep(parse_spec_with("together", &cfg, &env).unwrap());
        assert_eq!(
            (e.model.as_str(), e.base_url.as_str()),
            ("llama-70b", "https://api.together.xyz/v1")
        );
        assert_eq!(e.price.unwrap().input_per_mtok, 0.9);
        assert_eq!(e.api_key.unwrap().expose(), "t");
        let e = ep(parse_spec_with("ollama:qwen", &cfg, &env).unwrap());
        assert_eq!(e.base_url, "http://gpu:11434/v1");
        let s = parse_spec_with("claude:claude-sonnet-4-0", &cfg, &env).unwrap();
        assert!(matches!(&s, Spec::Anthropic(e) if e.base_url == ANTHROPIC_BASE_URL));
    }

    #[test]
    fn debug_never_shows_the_key() {
        let s = parse_spec_with(
            "anthropic:m",
            &LlmConfig::default(),
            &env_of(&[("ANTHROPIC_API_KEY", "sk-ant-very-secret")]),
        )
        .unwrap();
        let d = format!("{s:?}");
        assert!(!d.contains("sk-ant-very-secret"), "{d}");
        assert!(d.contains("***"), "{d}");
    }
}
