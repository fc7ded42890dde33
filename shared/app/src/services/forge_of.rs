//! One tick's forge: the adapter of the forge the task's repository lives
//! on (`TaskInput::forge`, or the recorded delivery's before admission).

use agent_zero_engine::{Admission, AdmitError, ChangedFiles, Forge, ForgeError, Publication, Received, Stimulus};
use agent_zero_runner::CheckoutSource;

use super::workspace::CheckoutPort;

/// GitHub's adapter, Gitea's (Forgejo's is Gitea's) or GitLab's.
pub(crate) enum ForgeOf<G, T, L> {
    GitHub(G),
    Gitea(T),
    GitLab(L),
}

impl<G: Forge, T: Forge, L: Forge> Forge for ForgeOf<G, T, L> {
    async fn publish(&self, publication: Publication<'_>) -> Result<String, String> {
        match self {
            Self::GitHub(forge) => forge.publish(publication).await,
            Self::Gitea(forge) => forge.publish(publication).await,
            Self::GitLab(forge) => forge.publish(publication).await,
        }
    }

    async fn admit(&self, received: &Received) -> Result<Admission, AdmitError> {
        match self {
            Self::GitHub(forge) => forge.admit(received).await,
            Self::Gitea(forge) => forge.admit(received).await,
            Self::GitLab(forge) => forge.admit(received).await,
        }
    }

    async fn changed_files(&self, stimulus: &Stimulus) -> Result<ChangedFiles, ForgeError> {
        match self {
            Self::GitHub(forge) => forge.changed_files(stimulus).await,
            Self::Gitea(forge) => forge.changed_files(stimulus).await,
            Self::GitLab(forge) => forge.changed_files(stimulus).await,
        }
    }
}

impl<G: CheckoutPort, T: CheckoutPort, L: CheckoutPort> CheckoutPort for ForgeOf<G, T, L> {
    async fn source(&self, repository: &str, git_ref: &str) -> Result<(String, CheckoutSource), String> {
        match self {
            Self::GitHub(checkout) => checkout.source(repository, git_ref).await,
            Self::Gitea(checkout) => checkout.source(repository, git_ref).await,
            Self::GitLab(checkout) => checkout.source(repository, git_ref).await,
        }
    }
}
