//! A learning rate far too large, seen in real traces (digits-mlp-keras at lr 5, 10 epochs, on
//! Keras' torch and TensorFlow backends, `tests/data/keras{,-tf}-lr5-trace.json`): the first
//! updates break the network, and what follows — a silent output, dead ReLUs, a flat loss — is
//! their consequence. The answer is the learning rate alone.

mod common;

use common::*;
use reprolab_localize::{localize, rank_to_types};
use serde_json::json;

#[test]
fn a_diverged_training_is_blamed_on_the_learning_rate_not_on_its_dead_layers() {
    let s = subject("digits-mlp-keras");
    let c = config(&s, json!({"lr": 5.0, "epochs": 10}));
    for name in ["keras-lr5", "keras-tf-lr5"] {
        let found = localize(&s, &c, Some(&fixture(name)));
        assert_eq!(
            rank_to_types(&found, 5),
            vec![label("HLR")],
            "{name}: {}",
            show(&found)
        );
        // The dead layers and the silent output are still reported, as consequences.
        let consequences: Vec<_> = found
            .iter()
            .filter(|x| x.label.fault != reprolab_core::FaultType::HLR)
            .collect();
        assert!(!consequences.is_empty(), "{name}");
        assert!(
            consequences
                .iter()
                .any(|x| x.evidence.contains("divergence")
                    || x.evidence.contains("broke the network")),
            "{name}: {}",
            show(&found)
        );
    }
}
