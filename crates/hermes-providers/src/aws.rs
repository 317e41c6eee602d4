//! What the Bedrock wires share with no AWS crate: the Bedrock runtime's hosts (which route
//! matching and the engine's settlement read too) and model ids as URL path segments. What the
//! AWS crates do (credentials, SigV4 signing, event-stream frames) is the crate `hermes-aws`.

use hermes_core::TargetHost;

/// The Bedrock runtime's base URL in `region` (docs/spec.md §8a): botocore's endpoint for the
/// region's partition, neither FIPS nor dual-stack
/// (`https://bedrock-runtime.{region}.amazonaws.com`, `….amazonaws.com.cn` in China).
pub fn runtime_base_url(region: &str) -> String {
    RuntimeHost {
        region: region.to_owned(),
        fips: false,
        dual_stack: false,
    }
    .base_url()
}

/// One AWS partition as botocore's `partitions.json` describes it (`botocore/data/
/// partitions.json`): the DNS suffix of its endpoints, the dual-stack suffix where it has
/// dual-stack endpoints, and the shape of its region names (`regionRegex`, read here as a
/// prefix before `{word}-{digits}`).
struct Partition {
    /// `regionRegex` is `^{prefix}\w+-\d+$`; the standard partition takes every other region.
    region_prefix: &'static str,
    /// `dnsSuffix`.
    dns_suffix: &'static str,
    /// `dualStackDnsSuffix` when `supportsDualStack` is true.
    dual_stack_suffix: Option<&'static str>,
}

/// The partitions in botocore's `partitions.json` (`aws`, `aws-cn`, `aws-us-gov`, `aws-iso`,
/// `aws-iso-b`, `aws-iso-e`, `aws-iso-f`); every one supports FIPS. The standard partition is
/// last: botocore's `aws.partition` falls back to it for a region no other one matches.
const PARTITIONS: &[Partition] = &[
    Partition {
        region_prefix: "cn-",
        dns_suffix: "amazonaws.com.cn",
        dual_stack_suffix: Some("api.amazonwebservices.com.cn"),
    },
    Partition {
        region_prefix: "us-gov-",
        dns_suffix: "amazonaws.com",
        dual_stack_suffix: Some("api.aws"),
    },
    Partition {
        region_prefix: "us-iso-",
        dns_suffix: "c2s.ic.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "us-isob-",
        dns_suffix: "sc2s.sgov.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "eu-isoe-",
        dns_suffix: "cloud.adc-e.uk",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "us-isof-",
        dns_suffix: "csp.hci.ic.gov",
        dual_stack_suffix: None,
    },
    Partition {
        region_prefix: "",
        dns_suffix: "amazonaws.com",
        dual_stack_suffix: Some("api.aws"),
    },
];

/// The partition of `region`, as botocore's `aws.partition` picks it.
fn partition_of(region: &str) -> &'static Partition {
    PARTITIONS
        .iter()
        .find(|p| {
            region.strip_prefix(p.region_prefix).is_some_and(|rest| {
                // `\w+-\d+` after the prefix (the standard partition's names have one more
                // label in front, which the shape check of `is_region` covers).
                p.region_prefix.is_empty()
                    || rest.split_once('-').is_some_and(|(word, digits)| {
                        !word.is_empty()
                            && word.bytes().all(|b| b.is_ascii_alphanumeric())
                            && !digits.is_empty()
                            && digits.bytes().all(|b| b.is_ascii_digit())
                    })
            })
        })
        .unwrap_or(&PARTITIONS[PARTITIONS.len() - 1])
}

/// True for a name shaped like an AWS region: lowercase labels joined by `-`, the first two
/// letters, the last digits, at least three (`us-east-1`, `us-gov-west-1`, `cn-north-1`).
fn is_region(name: &str) -> bool {
    let labels: Vec<&str> = name.split('-').collect();
    labels.len() >= 3
        && labels[0].len() == 2
        && labels[0].bytes().all(|b| b.is_ascii_lowercase())
        && labels.iter().all(|l| {
            !l.is_empty()
                && l.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
        && labels[labels.len() - 1].bytes().all(|b| b.is_ascii_digit())
}

/// A Bedrock runtime host: one of the endpoints botocore's endpoint rules for `bedrock-runtime`
/// build from a region (`botocore/data/bedrock-runtime/2023-09-30/endpoint-rule-set-1.json`):
/// `https://bedrock-runtime.{Region}.{dnsSuffix}`, with `UseFIPS` `bedrock-runtime-fips.…`, with
/// `UseDualStack` the partition's `dualStackDnsSuffix` (`api.aws`, in China
/// `api.amazonwebservices.com.cn`), both together `bedrock-runtime-fips.{Region}.{dualStackDnsSuffix}`;
/// the suffix is the one of the region's partition (`botocore/data/partitions.json`: GovCloud
/// `us-gov-*` on `amazonaws.com`, China `cn-*` on `amazonaws.com.cn`, the ISO partitions on
/// their own). This is the one recognizer every AWS wire and the relay-family table ask
/// "is this host Bedrock?"; a lookalike (another suffix, another first label, a host inside
/// one of these) is not one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RuntimeHost {
    /// The region the host serves, which is also the SigV4 signing region.
    pub region: String,
    /// A FIPS endpoint (`bedrock-runtime-fips.…`).
    pub fips: bool,
    /// A dual-stack endpoint (the partition's `dualStackDnsSuffix`).
    pub dual_stack: bool,
}

impl RuntimeHost {
    /// The runtime host `base_url` names, if it names one (its host as routing reads it:
    /// userinfo, port and path ignored, case-insensitive).
    pub fn of(base_url: &str) -> Option<RuntimeHost> {
        RuntimeHost::of_host(&TargetHost::from_base_url(base_url)?)
    }

    /// The runtime host `host` is, if it is one.
    pub fn of_host(host: &TargetHost) -> Option<RuntimeHost> {
        let TargetHost::Domain(name) = host else {
            return None;
        };
        let (fips, rest) = match name.strip_prefix("bedrock-runtime-fips.") {
            Some(rest) => (true, rest),
            None => (false, name.strip_prefix("bedrock-runtime.")?),
        };
        let (region, suffix) = rest.split_once('.')?;
        if !is_region(region) {
            return None;
        }
        let partition = partition_of(region);
        let dual_stack = if suffix == partition.dns_suffix {
            false
        } else if Some(suffix) == partition.dual_stack_suffix {
            true
        } else {
            return None;
        };
        Some(RuntimeHost {
            region: region.to_owned(),
            fips,
            dual_stack,
        })
    }

    /// The host name, as botocore's endpoint rules build it.
    pub fn host(&self) -> String {
        let partition = partition_of(&self.region);
        let suffix = match (self.dual_stack, partition.dual_stack_suffix) {
            (true, Some(suffix)) => suffix,
            _ => partition.dns_suffix,
        };
        let fips = if self.fips { "-fips" } else { "" };
        format!("bedrock-runtime{fips}.{}.{suffix}", self.region)
    }

    /// The base URL (`https://` and the host).
    pub fn base_url(&self) -> String {
        format!("https://{}", self.host())
    }
}

/// `id` as one URL path segment, percent-encoded as the AWS SDKs do: everything but the
/// unreserved characters (`A-Z a-z 0-9 - . _ ~`), so a model id's `:` is `%3A` and an
/// inference-profile ARN's `/` is `%2F`.
pub use crate::segment::unreserved as path_segment;

#[cfg(test)]
mod tests {
    use super::*;

    /// Every endpoint form botocore's `bedrock-runtime` rules build, with the region each
    /// serves and whether it is FIPS and dual-stack.
    const RUNTIME_HOSTS: &[(&str, &str, bool, bool)] = &[
        (
            "bedrock-runtime.us-east-1.amazonaws.com",
            "us-east-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-east-1.amazonaws.com",
            "us-east-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.us-west-2.api.aws",
            "us-west-2",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.us-east-2.api.aws",
            "us-east-2",
            true,
            true,
        ),
        (
            "bedrock-runtime.eu-central-1.amazonaws.com",
            "eu-central-1",
            false,
            false,
        ),
        (
            "bedrock-runtime.ap-southeast-5.amazonaws.com",
            "ap-southeast-5",
            false,
            false,
        ),
        (
            "bedrock-runtime.us-gov-west-1.amazonaws.com",
            "us-gov-west-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-gov-west-1.amazonaws.com",
            "us-gov-west-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.us-gov-east-1.api.aws",
            "us-gov-east-1",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.us-gov-east-1.api.aws",
            "us-gov-east-1",
            true,
            true,
        ),
        (
            "bedrock-runtime.cn-north-1.amazonaws.com.cn",
            "cn-north-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.cn-northwest-1.amazonaws.com.cn",
            "cn-northwest-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.cn-north-1.api.amazonwebservices.com.cn",
            "cn-north-1",
            false,
            true,
        ),
        (
            "bedrock-runtime-fips.cn-north-1.api.amazonwebservices.com.cn",
            "cn-north-1",
            true,
            true,
        ),
        (
            "bedrock-runtime.us-iso-east-1.c2s.ic.gov",
            "us-iso-east-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-isob-east-1.sc2s.sgov.gov",
            "us-isob-east-1",
            true,
            false,
        ),
        (
            "bedrock-runtime.eu-isoe-west-1.cloud.adc-e.uk",
            "eu-isoe-west-1",
            false,
            false,
        ),
        (
            "bedrock-runtime-fips.us-isof-south-1.csp.hci.ic.gov",
            "us-isof-south-1",
            true,
            false,
        ),
    ];

    #[test]
    fn every_runtime_endpoint_form_is_bedrock_with_its_region() {
        for &(host, region, fips, dual_stack) in RUNTIME_HOSTS {
            let want = RuntimeHost {
                region: region.to_owned(),
                fips,
                dual_stack,
            };
            assert_eq!(
                RuntimeHost::of(&format!("https://{host}")),
                Some(want.clone()),
                "{host}"
            );
            assert_eq!(want.host(), host, "botocore builds {host} back");
            // Scheme-less, upper case, a port, a path, a trailing dot: the same host.
            for url in [
                host.to_owned(),
                format!("https://{}:443/", host.to_ascii_uppercase()),
                format!("https://{host}./model/m/invoke"),
                format!("http://{host}:8080"),
            ] {
                assert_eq!(RuntimeHost::of(&url), Some(want.clone()), "{url}");
            }
        }
        assert_eq!(
            runtime_base_url("cn-north-1"),
            "https://bedrock-runtime.cn-north-1.amazonaws.com.cn"
        );
        assert_eq!(
            runtime_base_url("us-gov-west-1"),
            "https://bedrock-runtime.us-gov-west-1.amazonaws.com"
        );
    }

    #[test]
    fn lookalike_and_foreign_hosts_are_not_bedrock() {
        for url in [
            "https://bedrock-runtime.us-east-1.amazonaws.com.evil.test",
            "https://evilbedrock-runtime.us-east-1.amazonaws.com",
            "https://x.bedrock-runtime.us-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.amazonaws.com@evil.test",
            "https://bedrock-runtime-fips.us-gov-west-1.amazonaws.com:443@evil.test/",
            "https://evil.test/bedrock-runtime.us-east-1.amazonaws.com",
            "https://evil.test?h=bedrock-runtime.us-east-1.amazonaws.com",
            "https://evil.test#bedrock-runtime.us-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.evil.amazonaws.com",
            "https://bedrock-runtime.amazonaws.com",
            "https://bedrock-runtime.my-bucket.s3.amazonaws.com",
            "https://bedrock-runtime.us-east-1.api.aws.evil.test",
            "https://bedrock-runtime.us_east_1.amazonaws.com",
            "https://bedrock-runtime.useast1.amazonaws.com",
            "https://bedrock-runtime.us-east-x.amazonaws.com",
            "https://bedrock-runtime-fips.us-east-1.amazonaws.com.cn",
            "https://bedrock-runtime.cn-north-1.amazonaws.com",
            "https://bedrock-runtime.cn-north-1.api.aws",
            "https://bedrock-runtime.us-east-1.api.amazonwebservices.com.cn",
            "https://bedrock-runtime.us-iso-east-1.amazonaws.com",
            "https://bedrock-runtime.us-east-1.c2s.ic.gov",
            "https://bedrock-runtime.us-iso-east-1.api.aws",
            "https://bedrock-runtime-dualstack.us-east-1.amazonaws.com",
            "https://bedrock-runtime-fips-fips.us-east-1.amazonaws.com",
            "https://bedrock.us-east-1.amazonaws.com",
            "https://bedrock-agent-runtime.us-east-1.amazonaws.com",
            "https://127.0.0.1:8080",
            "sim://bedrock",
            "",
        ] {
            assert_eq!(RuntimeHost::of(url), None, "{url}");
        }
    }

    #[test]
    fn model_ids_and_arns_are_one_encoded_path_segment() {
        assert_eq!(
            path_segment("anthropic.claude-opus-4-6-v1:0"),
            "anthropic.claude-opus-4-6-v1%3A0"
        );
        assert_eq!(
            path_segment("arn:aws:bedrock:us-east-1:123:inference-profile/us.x"),
            "arn%3Aaws%3Abedrock%3Aus-east-1%3A123%3Ainference-profile%2Fus.x"
        );
    }
}
