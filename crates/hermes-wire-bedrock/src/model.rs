//! What a Bedrock model id tells the Converse wire: the model behind it (an inference-profile
//! prefix, an ARN and a `-v1:0` suffix stripped), its reasoning replay policy (docs/spec.md §5) and
//! its thinking request (docs/spec.md §3c). The id itself is read by the Anthropic wire, whose
//! InvokeModel door reads the same ids ([`hermes_wire_anthropic::model::bedrock_id`], with its Claude
//! parser).

use hermes_wire_anthropic::model::{ClaudeModel, bedrock_id};

/// How a model's stored reasoning is replayed (docs/spec.md §5, "Bedrock Converse").
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    /// Claude: stored signed `reasoningText` and `redactedContent` blocks verbatim, to the model
    /// and host that minted them.
    Signed,
    /// DeepSeek-R1 and Kimi K3: no reasoning before the tool loop in flight; inside it, the
    /// model's own reasoning as unsigned `reasoningText`.
    Strip,
    /// Every other model: readable reasoning text only (no signature, no redacted blocks).
    Unsigned,
}

impl Policy {
    /// How the policy is named to users.
    pub fn describe(self) -> &'static str {
        match self {
            Policy::Signed => {
                "signed (Claude: reasoningText with signature and redactedContent verbatim, to their minter)"
            }
            Policy::Strip => {
                "strip (no reasoning before the tool loop; inside it the model's own reasoning, unsigned)"
            }
            Policy::Unsigned => "unsigned (reasoning text only: no signature, no redacted blocks)",
        }
    }
}

/// A Bedrock model id, read.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BedrockModel {
    /// The foundation model id without an inference-profile prefix or an ARN
    /// (`anthropic.claude-opus-4-6-v1:0`), lowercased.
    pub base: String,
    /// The Claude model, when it is one.
    pub claude: Option<ClaudeModel>,
}

impl BedrockModel {
    /// Reads `model`: a foundation-model id (`anthropic.claude-sonnet-4-5-20250929-v1:0`), a
    /// cross-region inference profile (`us.anthropic.claude-…`) or an ARN whose last path
    /// segment is one (`arn:aws:bedrock:us-east-1:123456789012:inference-profile/us.anthropic.
    /// claude-…`). An application-inference-profile ARN names no model: it reads as an unknown
    /// model.
    pub fn parse(model: &str) -> BedrockModel {
        let (base, claude) = bedrock_id(model);
        BedrockModel { base, claude }
    }

    /// The replay policy: Claude is signed; DeepSeek-R1 (`deepseek.r1-v1:0`, docs.aws.amazon.com/
    /// bedrock/latest/userguide/model-card-deepseek-deepseek-r1.html) and Kimi K3 (Moonshot's
    /// Bedrock ids are `moonshot.kimi-k2-thinking` and `moonshotai.kimi-k2.5`; K3 is matched
    /// under either vendor prefix) strip; everything else is unsigned.
    pub fn policy(&self) -> Policy {
        if self.claude.is_some() {
            Policy::Signed
        } else if self.base.starts_with("deepseek.r1") || self.is_kimi_k3() {
            Policy::Strip
        } else {
            Policy::Unsigned
        }
    }

    fn is_kimi_k3(&self) -> bool {
        ["moonshot.", "moonshotai."]
            .iter()
            .filter_map(|v| self.base.strip_prefix(v))
            .any(|id| id.starts_with("kimi-k3"))
    }

    /// Amazon Nova 2 (`amazon.nova-2-lite-v1:0`): takes `reasoningConfig` (docs/spec.md §3c).
    pub fn is_nova2(&self) -> bool {
        self.base.starts_with("amazon.nova-2")
    }

    /// OpenAI's open-weight gpt-oss models (`openai.gpt-oss-20b-1:0`, `openai.gpt-oss-120b-1:0`,
    /// docs.aws.amazon.com/bedrock/latest/userguide/model-parameters-openai.html): take
    /// `reasoning_effort` (docs/spec.md §3c).
    pub fn is_gpt_oss(&self) -> bool {
        self.base.starts_with("openai.gpt-oss-")
    }

    /// Models that always reason and document no control over it on Bedrock: DeepSeek-R1
    /// ("Reasoning is always enabled for this model. The model does not support toggling the
    /// reasoning capability on and off", docs.aws.amazon.com/bedrock/latest/userguide/
    /// inference-reasoning.html) and Kimi K2 Thinking (`moonshot.kimi-k2-thinking`, a
    /// thinking-only model).
    pub fn always_reasons(&self) -> bool {
        self.base.starts_with("deepseek.r1") || self.base.starts_with("moonshot.kimi-k2-thinking")
    }

    /// Amazon Nova of the first generation (micro, lite, pro, premier): no reasoning request
    /// (a `reasoningConfig` is "Malformed input request", docs/providers.md).
    pub fn is_nova1(&self) -> bool {
        self.base.starts_with("amazon.nova-") && !self.is_nova2()
    }

    /// Takes a `cachePoint` block (docs.aws.amazon.com/bedrock/latest/userguide/
    /// prompt-caching.html: Claude 3.5 Haiku, 3.7 Sonnet and the Claude 4 and later models, and
    /// the Amazon Nova models). The earlier Claude 3 models never get one.
    pub fn caches_prompts(&self) -> bool {
        if self.base.starts_with("amazon.nova-") {
            return true;
        }
        let Some(claude) = &self.claude else {
            return false;
        };
        match claude.version {
            None => true,
            Some((3, minor)) => {
                minor >= 7 || (minor == 5 && claude.family.as_deref() == Some("haiku"))
            }
            Some((major, _)) => major > 3,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn version(id: &str) -> Option<(u32, u32)> {
        BedrockModel::parse(id).claude.and_then(|c| c.version)
    }

    #[test]
    fn claude_ids_are_read_through_profiles_arns_and_suffixes() {
        assert_eq!(version("anthropic.claude-opus-4-6-v1:0"), Some((4, 6)));
        assert_eq!(version("anthropic.claude-opus-4-6-v1"), Some((4, 6)));
        assert_eq!(
            version("us.anthropic.claude-sonnet-4-5-20250929-v1:0"),
            Some((4, 5))
        );
        assert_eq!(
            version(
                "arn:aws:bedrock:us-east-1:123456789012:inference-profile/global.anthropic.claude-haiku-4-5-20251001-v1:0"
            ),
            Some((4, 5))
        );
        assert_eq!(
            version("anthropic.claude-3-7-sonnet-20250219-v1:0"),
            Some((3, 7))
        );
        // Without the suffix stripped, `-v1:0` would read as version 0.
        let mythos = BedrockModel::parse("anthropic.claude-mythos-v1:0");
        assert_eq!(mythos.claude.as_ref().unwrap().version, None);
        assert!(mythos.claude.unwrap().keeps_prior_thinking());
        assert_eq!(
            BedrockModel::parse("apac.anthropic.claude-sonnet-4-6").base,
            "anthropic.claude-sonnet-4-6"
        );
        assert!(BedrockModel::parse("amazon.nova-pro-v1:0").claude.is_none());
        assert!(
            BedrockModel::parse(
                "arn:aws:bedrock:us-east-1:123456789012:application-inference-profile/a1b2c3"
            )
            .claude
            .is_none()
        );
    }

    #[test]
    fn policies_follow_the_model() {
        let policy = |id: &str| BedrockModel::parse(id).policy();
        assert_eq!(policy("us.anthropic.claude-opus-4-6-v1:0"), Policy::Signed);
        assert_eq!(policy("deepseek.r1-v1:0"), Policy::Strip);
        assert_eq!(policy("us.deepseek.r1-v1:0"), Policy::Strip);
        assert_eq!(policy("moonshotai.kimi-k3"), Policy::Strip);
        assert_eq!(policy("moonshot.kimi-k3-thinking"), Policy::Strip);
        assert_eq!(policy("moonshot.kimi-k2-thinking"), Policy::Unsigned);
        assert_eq!(policy("deepseek.v3-v1:0"), Policy::Unsigned);
        assert_eq!(policy("openai.gpt-oss-120b-1:0"), Policy::Unsigned);
        assert_eq!(policy("amazon.nova-2-lite-v1:0"), Policy::Unsigned);
        assert_eq!(policy("meta.llama3-3-70b-instruct-v1:0"), Policy::Unsigned);
    }

    #[test]
    fn nova_generations_and_prompt_caching() {
        assert!(BedrockModel::parse("us.amazon.nova-2-lite-v1:0").is_nova2());
        assert!(!BedrockModel::parse("amazon.nova-pro-v1:0").is_nova2());
        assert!(BedrockModel::parse("amazon.nova-premier-v1:0").is_nova1());
        for id in [
            "anthropic.claude-opus-4-6-v1",
            "anthropic.claude-3-7-sonnet-20250219-v1:0",
            "anthropic.claude-3-5-haiku-20241022-v1:0",
            "anthropic.claude-mythos-v1:0",
            "amazon.nova-micro-v1:0",
            "amazon.nova-2-lite-v1:0",
        ] {
            assert!(BedrockModel::parse(id).caches_prompts(), "{id}");
        }
        for id in [
            "anthropic.claude-3-haiku-20240307-v1:0",
            "anthropic.claude-3-5-sonnet-20240620-v1:0",
            "deepseek.r1-v1:0",
            "meta.llama3-3-70b-instruct-v1:0",
        ] {
            assert!(!BedrockModel::parse(id).caches_prompts(), "{id}");
        }
    }
}
