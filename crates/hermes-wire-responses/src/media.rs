//! Images on the Responses wire: chat-style `image_url` parts of user messages and tool results
//! become `{"type":"input_image","image_url","detail"}` parts beside `input_text` ones
//! (openai-python 3.57.0: `ResponseInputImageParam` in a message's content, with `detail`
//! required, one of `low`, `high`, `auto`, `original`; `image_url` "A fully qualified URL or
//! base64 encoded image in a data URL"; a `function_call_output`'s `output` may be a list of
//! `ResponseInputTextContentParam` / `ResponseInputImageContentParam`,
//! `response_function_call_output_item_param.py`). The URL goes as stored; a chat part without
//! `detail` gets `auto`, the API's default.

use hermes_core::Message;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use hermes_providers::native::EncodeError;
use hermes_providers::native::image::{self, Image, Piece};

/// The `detail` values the API takes (`ImageDetail`, `types/responses/image_detail.py`).
const DETAILS: &[&str] = &["low", "high", "auto", "original"];

/// The image types the API takes: PNG, JPEG, WEBP and non-animated GIF (OpenAI's "Images and
/// vision" guide, "Image input requirements").
const MEDIA_TYPES: &[&str] = &["image/png", "image/jpeg", "image/webp", "image/gif"];

/// True when the message's content holds an `image_url` part.
pub(super) fn has_images(msg: &Message) -> bool {
    image::has_images(msg.content.as_ref())
}

/// One `input_text` or `input_image` part.
pub(super) enum InputPart {
    /// The text's JSON string literal as stored.
    Text(Box<RawValue>),
    /// An image, with the `detail` it goes with.
    Image(Image, String),
}

impl Serialize for InputPart {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(3))?;
        match self {
            InputPart::Text(text) => {
                map.serialize_entry("type", "input_text")?;
                map.serialize_entry("text", text)?;
            }
            InputPart::Image(img, detail) => {
                map.serialize_entry("type", "input_image")?;
                map.serialize_entry("image_url", &img.url)?;
                map.serialize_entry("detail", detail)?;
            }
        }
        map.end()
    }
}

/// The parts of message `index`: non-empty texts and images in stored order; other parts are
/// left out, as a text-only message leaves them out. A detail or a data URL's media type the
/// API does not take is an error.
pub(super) fn input_parts(msg: &Message, index: usize) -> Result<Vec<InputPart>, EncodeError> {
    let pieces = image::message_pieces(msg, index, "the Responses API", MEDIA_TYPES)
        .map_err(EncodeError::Image)?;
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text { text, .. } if text.get() != "\"\"" => {
                out.push(InputPart::Text(text.to_owned()));
            }
            Piece::Image(img) => {
                let detail = img.detail.clone().unwrap_or_else(|| "auto".to_owned());
                if !DETAILS.contains(&detail.as_str()) {
                    return Err(EncodeError::Image(format!(
                        "message {index}: the image {} has detail `{detail}`; the Responses API takes {}",
                        img.shown(),
                        DETAILS.join(", ")
                    )));
                }
                out.push(InputPart::Image(img, detail));
            }
            Piece::Text { .. } | Piece::Other(_) => {}
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use hermes_core::{RequestParts, Verdicts};
    use serde_json::{Value, json};

    use super::super::body::{Drops, encode};
    use hermes_providers::testing::{PNG, decision, history, image_history};

    fn encoded(h: &[hermes_core::Message]) -> Result<Value, String> {
        let decision = decision("openai-responses", "https://api.openai.com/v1", "gpt-4.1");
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(h, &decision, &verdicts);
        let out = encode(&parts, &Drops::default()).map_err(|e| e.to_string())?;
        Ok(serde_json::from_slice(&out.body).unwrap())
    }

    #[test]
    fn images_of_user_messages_and_tool_results_go_out_as_input_images() {
        let body = encoded(&image_history(true)).unwrap();
        let png = json!({"type": "input_image",
                         "image_url": format!("data:image/png;base64,{PNG}"), "detail": "auto"});
        assert_eq!(
            body["input"],
            json!([
                {"role": "user", "content": [
                    {"type": "input_text", "text": "What is in these?"},
                    png,
                    {"type": "input_image", "image_url": "https://example.com/cat.jpg", "detail": "low"},
                ]},
                {"type": "function_call", "call_id": "call_1", "name": "screenshot", "arguments": "{}"},
                {"type": "function_call_output", "call_id": "call_1", "output": [
                    {"type": "input_text", "text": "the screen"},
                    png,
                ]},
            ])
        );
    }

    #[test]
    fn a_detail_the_api_does_not_take_is_an_error_naming_the_message() {
        let h = history(json!([
            {"role": "system", "content": "s"},
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "https://example.com/a.png", "detail": "huge"}}]},
        ]));
        assert_eq!(
            encoded(&h).unwrap_err(),
            "message 1: the image https://example.com/a.png has detail `huge`; the Responses API takes low, high, auto, original"
        );
    }
}
