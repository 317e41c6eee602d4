//! The reasoning ciphertext (`encrypted_content`) and the self-describing item ids of the
//! `openai-responses` profile.
//!
//! `encrypted_content` is `base64(header ‖ HMAC(key, domain ‖ header ‖ model))` where the carried
//! header is the JSON `{"org","id","reasoning"}` (organisation, reasoning item id, hidden
//! reasoning text): bound to the model it was minted for, the organisation and the item. A
//! function call's `fc_…` id and a message's `msg_…` id are `PREFIX + H + T` with `H` the hex of
//! the paired `rs_…` id and `T` a 16-hex HMAC tag over `H`, so the simulator recognises its own
//! ids and their pairing without keeping state; any other id is new to it.

use serde_json::{Value, json};

use crate::sign;

/// HMAC domain of the reasoning ciphertext.
const DOMAIN: &str = "openai-responses encrypted_content";
/// HMAC domain of the pairing tag in `fc_…` / `msg_…` ids.
const PAIR_DOMAIN: &str = "openai-responses item pairing";
/// Hex digits of an `rs_…` id.
pub(crate) const RS_HEX: usize = 32;
/// Hex digits of the pairing tag.
const TAG_HEX: usize = 16;
/// HMAC domain of a compaction item's ciphertext.
const COMPACTION_DOMAIN: &str = "openai-responses compaction";

/// Seals a compaction item `id` for `model` and `org`: it carries `chain`, the running digest of
/// the input it stands for ([`super::prefix`]), and `items`, how many input items it compacted.
pub(crate) fn seal_compaction(
    key: &[u8],
    model: &str,
    org: &str,
    id: &str,
    chain: &[u8; 32],
    items: usize,
) -> String {
    let chain: String = chain.iter().map(|b| format!("{b:02x}")).collect();
    let header = json!({"org": org, "id": id, "chain": chain, "items": items}).to_string();
    sign::seal_bound(key, COMPACTION_DOMAIN, header.as_bytes(), model.as_bytes())
}

/// What opening a replayed compaction item found: [`Opened`], and on success the running
/// digest it was sealed with.
pub(crate) fn open_compaction(
    key: &[u8],
    model: &str,
    org: &str,
    id: &str,
    data: &str,
) -> (Opened, Option<[u8; 32]>) {
    let Some(header) = sign::open_bound(key, COMPACTION_DOMAIN, data, model.as_bytes()) else {
        return (Opened::Unreadable, None);
    };
    let Ok(header) = serde_json::from_slice::<Value>(&header) else {
        return (Opened::Unreadable, None);
    };
    // A compaction item replayed without its id is still the one it names.
    if !id.is_empty() && header.get("id").and_then(Value::as_str) != Some(id) {
        return (Opened::Unreadable, None);
    }
    if header.get("org").and_then(Value::as_str) != Some(org) {
        return (Opened::ForeignOrg, None);
    }
    let chain = header.get("chain").and_then(Value::as_str).and_then(|hex| {
        let bytes: Option<Vec<u8>> = (0..hex.len())
            .step_by(2)
            .map(|i| u8::from_str_radix(hex.get(i..i + 2)?, 16).ok())
            .collect();
        <[u8; 32]>::try_from(bytes?).ok()
    });
    match chain {
        Some(c) => (Opened::Ok, Some(c)),
        None => (Opened::Unreadable, None),
    }
}

/// What opening a replayed `encrypted_content` found.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Opened {
    /// Minted by this simulator's organisation for this model and item.
    Ok,
    /// Minted (and intact) for another organisation.
    ForeignOrg,
    /// Not a blob this key minted for this model and item (changed, truncated, other model).
    Unreadable,
}

/// Seals the hidden reasoning of item `id` for `model` and `org`.
pub(crate) fn encrypt(key: &[u8], model: &str, org: &str, id: &str, reasoning: &str) -> String {
    let header = json!({"org": org, "id": id, "reasoning": reasoning}).to_string();
    sign::seal_bound(key, DOMAIN, header.as_bytes(), model.as_bytes())
}

/// Opens a replayed `encrypted_content` of item `id` for `model` against `org`.
pub(crate) fn open(key: &[u8], model: &str, org: &str, id: &str, data: &str) -> Opened {
    let Some(header) = sign::open_bound(key, DOMAIN, data, model.as_bytes()) else {
        return Opened::Unreadable;
    };
    let Ok(header) = serde_json::from_slice::<Value>(&header) else {
        return Opened::Unreadable;
    };
    if header.get("id").and_then(Value::as_str) != Some(id) {
        return Opened::Unreadable;
    }
    if header.get("org").and_then(Value::as_str) != Some(org) {
        return Opened::ForeignOrg;
    }
    Opened::Ok
}

/// The id of an item paired with reasoning item `rs_id` (`prefix` is `fc_` or `msg_`).
pub(crate) fn paired_id(key: &[u8], prefix: &str, rs_id: &str) -> String {
    let hex = rs_id.strip_prefix("rs_").unwrap_or(rs_id);
    let tag = sign::tag_hex(
        key,
        PAIR_DOMAIN,
        format!("{prefix}{hex}").as_bytes(),
        TAG_HEX,
    );
    format!("{prefix}{hex}{tag}")
}

/// The `rs_…` id an `fc_…` / `msg_…` id minted by [`paired_id`] names; `None` for any other id.
pub(crate) fn pair_of(key: &[u8], id: &str) -> Option<String> {
    let (prefix, rest) = ["fc_", "msg_"]
        .iter()
        .find_map(|p| id.strip_prefix(p).map(|r| (*p, r)))?;
    if rest.len() != RS_HEX + TAG_HEX || !rest.is_ascii() {
        return None;
    }
    let rs = format!("rs_{}", &rest[..RS_HEX]);
    (paired_id(key, prefix, &rs) == id).then_some(rs)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DEFAULT_KEY;

    #[test]
    fn ciphertext_is_bound_to_org_model_and_item() {
        let rs = format!("rs_{}", "a".repeat(RS_HEX));
        let e = encrypt(DEFAULT_KEY, "m", "org-a", &rs, "thinking");
        assert_eq!(open(DEFAULT_KEY, "m", "org-a", &rs, &e), Opened::Ok);
        assert_eq!(open(DEFAULT_KEY, "m", "org-b", &rs, &e), Opened::ForeignOrg);
        assert_eq!(
            open(DEFAULT_KEY, "m2", "org-a", &rs, &e),
            Opened::Unreadable
        );
        assert_eq!(
            open(DEFAULT_KEY, "m", "org-a", "rs_other", &e),
            Opened::Unreadable
        );
        assert_eq!(open(b"k", "m", "org-a", &rs, &e), Opened::Unreadable);
        assert_eq!(
            open(DEFAULT_KEY, "m", "org-a", &rs, "x"),
            Opened::Unreadable
        );
    }

    #[test]
    fn paired_ids_name_their_reasoning() {
        let rs = format!("rs_{}", "0123456789abcdef".repeat(2));
        let fc = paired_id(DEFAULT_KEY, "fc_", &rs);
        let msg = paired_id(DEFAULT_KEY, "msg_", &rs);
        assert_eq!(pair_of(DEFAULT_KEY, &fc), Some(rs.clone()));
        assert_eq!(pair_of(DEFAULT_KEY, &msg), Some(rs));
        assert_eq!(pair_of(b"k", &fc), None);
        assert_eq!(pair_of(DEFAULT_KEY, &fc.replace("fc_", "msg_")), None);
        assert_eq!(pair_of(DEFAULT_KEY, "fc_123"), None);
    }

    #[test]
    fn a_compaction_item_is_bound_to_org_model_and_item() {
        let chain = [7u8; 32];
        let e = seal_compaction(DEFAULT_KEY, "m", "org-a", "cmp_1", &chain, 3);
        assert_eq!(
            open_compaction(DEFAULT_KEY, "m", "org-a", "cmp_1", &e),
            (Opened::Ok, Some(chain))
        );
        assert_eq!(
            open_compaction(DEFAULT_KEY, "m", "org-b", "cmp_1", &e).0,
            Opened::ForeignOrg
        );
        assert_eq!(
            open_compaction(DEFAULT_KEY, "m2", "org-a", "cmp_1", &e).0,
            Opened::Unreadable
        );
        let mut tampered = e.clone().into_bytes();
        tampered[5] ^= 1;
        let tampered = String::from_utf8(tampered).unwrap();
        assert_eq!(
            open_compaction(DEFAULT_KEY, "m", "org-a", "cmp_1", &tampered).0,
            Opened::Unreadable
        );
    }
}
