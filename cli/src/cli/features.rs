//! What a command needs that this build of `strata` left out (the `[features]` of
//! cli/Cargo.toml, docs/cli.md "Features"): one refusal, naming the feature and how to build it.

use super::Failure;

/// The refusal of `what`, which needs the cargo feature `feature` this build was made without.
/// Exit 2, as a command line this build cannot run: nothing was opened or changed.
pub fn not_built(what: &str, feature: &str) -> Failure {
    Failure(
        format!(
            "{what} needs strata's `{feature}` feature, which this build left out: run it with \
             `cargo run --release --features {feature} -- …` in strata's source folder, or \
             install that build with `cargo install --path cli --features {feature}` \
             (`--features full` builds every feature)"
        ),
        2,
    )
}
