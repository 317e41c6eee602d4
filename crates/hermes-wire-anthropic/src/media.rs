//! Images on the Messages wire: chat-style `image_url` parts of user turns and tool results
//! become `image` blocks (`{"type":"image","source":{"type":"base64","media_type","data"}}` or
//! `{"type":"image","source":{"type":"url","url"}}`), the shapes of anthropic-sdk-python
//! 2.16.0's `ImageBlockParam`, `Base64ImageSourceParam` and `URLImageSourceParam`
//! (`anthropic/types/image_block_param.py`, `base64_image_source_param.py`,
//! `url_image_source_param.py`); a `tool_result`'s content takes text and image blocks
//! (`ToolResultBlockParam.content`, `tool_result_block_param.py`).

use hermes_core::Message;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use hermes_providers::native::EncodeError;
use hermes_providers::native::image::{self, Image, Piece, Source};

/// The media types a base64 source takes: `Base64ImageSourceParam.media_type`
/// (`Literal["image/jpeg", "image/png", "image/gif", "image/webp"]`).
const MEDIA_TYPES: &[&str] = &["image/jpeg", "image/png", "image/gif", "image/webp"];

/// True when the message's content holds an `image_url` part.
pub(super) fn has_images(msg: &Message) -> bool {
    image::has_images(msg.content.as_ref())
}

/// Reads the parts of message `index`, checking every image against what this wire takes.
pub(super) fn pieces(msg: &Message, index: usize) -> Result<Vec<Piece<'_>>, EncodeError> {
    image::message_pieces(msg, index, "the Anthropic Messages API", MEDIA_TYPES)
        .map_err(EncodeError::Image)
}

/// One part of a tool result's content.
pub(super) enum ResultPart<'h> {
    /// A part as stored (a text part is already a Messages text block).
    Stored(&'h RawValue),
    /// An image, rebuilt as an image block.
    Image(Image),
}

impl Serialize for ResultPart<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ResultPart::Stored(raw) => raw.serialize(s),
            ResultPart::Image(img) => {
                let mut map = s.serialize_map(Some(2))?;
                map.serialize_entry("type", "image")?;
                map.serialize_entry("source", &ImageSource(img))?;
                map.end()
            }
        }
    }
}

/// A tool result's parts: every part as stored, each `image_url` part an image block.
pub(super) fn result_parts<'h>(
    msg: &'h Message,
    index: usize,
) -> Result<Vec<ResultPart<'h>>, EncodeError> {
    Ok(pieces(msg, index)?
        .into_iter()
        .map(|p| match p {
            Piece::Text { part, .. } | Piece::Other(part) => ResultPart::Stored(part),
            Piece::Image(img) => ResultPart::Image(img),
        })
        .collect())
}

/// An image block's `source`.
pub(super) struct ImageSource<'a>(pub(super) &'a Image);

impl Serialize for ImageSource<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        match &self.0.source {
            Source::Data { media_type, data } => {
                map.serialize_entry("type", "base64")?;
                map.serialize_entry("media_type", media_type)?;
                map.serialize_entry("data", data)?;
            }
            Source::Url(url) => {
                map.serialize_entry("type", "url")?;
                map.serialize_entry("url", url)?;
            }
        }
        map.end()
    }
}

#[cfg(test)]
mod tests {
    use hermes_core::route::ThinkingRequest;
    use hermes_core::{Message, RequestParts, Verdicts};
    use serde_json::{Value, json};

    use super::super::body::{Drops, Flavor, Target, encode};
    use crate::testing::{PNG, decision, history, image_history};

    fn encoded(h: &[Message]) -> Result<Value, String> {
        let target = Target {
            flavor: Flavor::Direct,
            base_url: "https://api.anthropic.com".into(),
            max_tokens: None,
            account: None,
        };
        let decision = decision("anthropic", &target.base_url, "claude-opus-4-6");
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(h, &decision, &verdicts).thinking(ThinkingRequest::Off);
        let out = encode(&parts, &target, &Drops::default()).map_err(|e| e.to_string())?;
        Ok(serde_json::from_slice(&out.body).unwrap())
    }

    #[test]
    fn images_of_user_turns_and_tool_results_go_out_as_image_blocks() {
        let body = encoded(&image_history(true)).unwrap();
        let png = json!({"type": "image",
                         "source": {"type": "base64", "media_type": "image/png", "data": PNG}});
        assert_eq!(
            body["messages"],
            json!([
                {"role": "user", "content": [
                    {"type": "text", "text": "What is in these?"},
                    png,
                    {"type": "image", "source": {"type": "url", "url": "https://example.com/cat.jpg"}},
                ]},
                {"role": "assistant", "content": [
                    {"type": "tool_use", "id": "call_1", "name": "screenshot", "input": {}},
                ]},
                {"role": "user", "content": [
                    {"type": "tool_result", "tool_use_id": "call_1", "content": [
                        {"type": "text", "text": "the screen"},
                        png,
                    ], "cache_control": {"type": "ephemeral"}},
                ]},
            ])
        );
        assert!(!body.to_string().contains("image_url"));
    }

    #[test]
    fn a_media_type_the_api_does_not_take_is_an_error_naming_the_message() {
        let h = history(json!([
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/bmp;base64,Qk0="}}]},
        ]));
        assert_eq!(
            encoded(&h).unwrap_err(),
            "message 0: the image data:image/bmp;base64,… is of media type image/bmp; the Anthropic Messages API takes image/jpeg, image/png, image/gif, image/webp"
        );
    }
}
