//! Images on the Gemini wire: chat-style `image_url` parts become `inlineData {data, mimeType}`
//! parts (a `data:` URL) or `fileData {fileUri, mimeType}` parts (an http(s) URL, which the
//! Gemini API fetches: "File input methods", ai.google.dev/gemini-api/docs/file-input-methods).
//! `FileData.mime_type` is optional on the Gemini API (API reference, `FileData`) and required on
//! Vertex AI (`FileData.mimeType`, cloud.google.com/vertex-ai/generative-ai/docs/
//! model-reference/inference), so a URL whose type its extension does not tell is an error on
//! Vertex only.
//!
//! A tool result's images: Gemini 3 models take media inside the function response
//! (`functionResponse.parts`, each `{inlineData {mimeType, data}}` or `{fileData {fileUri,
//! mimeType}}`: "Multimodal function responses", ai.google.dev/gemini-api/docs/function-calling,
//! documented for the Gemini 3 series; google-genai 3.6 `FunctionResponsePart`,
//! `FunctionResponseBlob`, `FunctionResponseFileData`). Earlier models have no such field
//! documented, so there the images follow the function response as parts of the same user turn.
//!
//! Keys are in google-genai 3.6's order: a blob's `data` before `mimeType` (`Blob`), a file's
//! `fileUri` before `mimeType` (`FileData`); inside a function response `mimeType` before `data`
//! (`FunctionResponseBlob`).

use hermes_core::Message;
use serde::ser::SerializeMap;
use serde::{Serialize, Serializer};
use serde_json::value::RawValue;

use hermes_providers::native::EncodeError;
use hermes_providers::native::image::{self, Image, Piece, Source};

/// The image types Gemini takes: PNG, JPEG, WEBP, HEIC, HEIF ("Image understanding",
/// ai.google.dev/gemini-api/docs/image-understanding, "Supported image formats").
const MEDIA_TYPES: &[&str] = &[
    "image/png",
    "image/jpeg",
    "image/webp",
    "image/heic",
    "image/heif",
];

/// One image as Gemini takes it.
pub(super) enum Media {
    /// `inlineData`: the base64 data as stored and its media type.
    Inline { mime_type: String, data: String },
    /// `fileData`: the URL and its media type, when known.
    File {
        uri: String,
        mime_type: Option<String>,
    },
}

impl Media {
    fn of(img: Image, index: usize, vertex: bool) -> Result<Media, EncodeError> {
        let mime_type = img.media_type().map(str::to_owned);
        match img.source {
            Source::Data { media_type, data } => Ok(Media::Inline {
                mime_type: media_type,
                data,
            }),
            Source::Url(uri) => {
                if let Some(t) = mime_type.as_deref()
                    && !MEDIA_TYPES.contains(&t)
                {
                    return Err(EncodeError::Image(format!(
                        "message {index}: the image {uri} is of media type {t}; Gemini takes {}",
                        MEDIA_TYPES.join(", ")
                    )));
                }
                if vertex && mime_type.is_none() {
                    return Err(EncodeError::Image(format!(
                        "message {index}: the image {uri} has no media type hermes can tell from its URL, and Vertex AI's fileData needs one (name the file .png, .jpg, .webp, .heic or .heif, or attach it as a data: URL)"
                    )));
                }
                Ok(Media::File { uri, mime_type })
            }
        }
    }

    /// `{"inlineData": …}` or `{"fileData": …}`, as a content part holds it (`in_response`:
    /// as a function response's part holds it).
    fn write<S: Serializer>(&self, s: S, in_response: bool) -> Result<S::Ok, S::Error> {
        struct Inner<'a>(&'a Media, bool);
        impl Serialize for Inner<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                let mut map = s.serialize_map(Some(2))?;
                match self.0 {
                    Media::Inline { mime_type, data } if self.1 => {
                        map.serialize_entry("mimeType", mime_type)?;
                        map.serialize_entry("data", data)?;
                    }
                    Media::Inline { mime_type, data } => {
                        map.serialize_entry("data", data)?;
                        map.serialize_entry("mimeType", mime_type)?;
                    }
                    Media::File { uri, mime_type } => {
                        map.serialize_entry("fileUri", uri)?;
                        if let Some(t) = mime_type {
                            map.serialize_entry("mimeType", t)?;
                        }
                    }
                }
                map.end()
            }
        }
        let key = match self {
            Media::Inline { .. } => "inlineData",
            Media::File { .. } => "fileData",
        };
        let mut map = s.serialize_map(Some(1))?;
        map.serialize_entry(key, &Inner(self, in_response))?;
        map.end()
    }
}

impl Serialize for Media {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.write(s, false)
    }
}

/// A function response's parts: its images as `FunctionResponsePart`s.
pub(super) struct ResponseParts<'a>(pub(super) &'a [Media]);

impl Serialize for ResponseParts<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        struct One<'a>(&'a Media);
        impl Serialize for One<'_> {
            fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
                self.0.write(s, true)
            }
        }
        s.collect_seq(self.0.iter().map(One))
    }
}

/// True when the message's content holds an `image_url` part.
pub(super) fn has_images(msg: &Message) -> bool {
    image::has_images(msg.content.as_ref())
}

/// A user turn's content, in stored order.
pub(super) enum UserPart {
    /// A non-empty text part's string literal as stored.
    Text(Box<RawValue>),
    /// An image.
    Media(Media),
}

/// The texts and images of message `index` in stored order; other parts are left out, as a
/// text-only message leaves them out.
pub(super) fn user_parts(
    msg: &Message,
    index: usize,
    vertex: bool,
) -> Result<Vec<UserPart>, EncodeError> {
    let pieces =
        image::message_pieces(msg, index, "Gemini", MEDIA_TYPES).map_err(EncodeError::Image)?;
    let mut out = Vec::new();
    for piece in pieces {
        match piece {
            Piece::Text { text, .. } if text.get() != "\"\"" => {
                out.push(UserPart::Text(text.to_owned()));
            }
            Piece::Image(img) => out.push(UserPart::Media(Media::of(img, index, vertex)?)),
            Piece::Text { .. } | Piece::Other(_) => {}
        }
    }
    Ok(out)
}

/// The images of message `index` (a tool result), in stored order.
pub(super) fn images(msg: &Message, index: usize, vertex: bool) -> Result<Vec<Media>, EncodeError> {
    Ok(user_parts(msg, index, vertex)?
        .into_iter()
        .filter_map(|p| match p {
            UserPart::Media(m) => Some(m),
            UserPart::Text(_) => None,
        })
        .collect())
}

#[cfg(test)]
mod tests {
    use hermes_core::{Message, RequestParts, Verdicts};
    use serde_json::{Value, json};

    use super::super::body::{Target, encode};
    use hermes_providers::testing::{PNG, decision, history, image_history};

    fn encoded(h: &[Message], target: &Target, model: &str) -> Result<Value, String> {
        let decision = decision("gemini", &target.base_url, model);
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(h, &decision, &verdicts);
        let out = encode(&parts, target).map_err(|e| e.to_string())?;
        Ok(serde_json::from_slice(&out.body).unwrap())
    }

    fn user_turn() -> Value {
        json!({"parts": [
            {"text": "What is in these?"},
            {"inlineData": {"data": PNG, "mimeType": "image/png"}},
            {"fileData": {"fileUri": "https://example.com/cat.jpg", "mimeType": "image/jpeg"}},
        ], "role": "user"})
    }

    /// The AI Studio body for `model` over the image history (a result with an image).
    fn image_body(model: &str) -> Value {
        encoded(&image_history(true), &Target::ai_studio(), model).unwrap()
    }

    fn call_turn() -> Value {
        json!({"parts": [{"functionCall": {"id": "call_1", "args": {}, "name": "screenshot"}}],
               "role": "model"})
    }

    #[test]
    fn gemini_3_takes_a_results_images_inside_the_function_response() {
        let body = image_body("gemini-3-flash-preview");
        assert_eq!(
            body["contents"],
            json!([
                user_turn(),
                call_turn(),
                {"parts": [{"functionResponse": {
                    "parts": [{"inlineData": {"mimeType": "image/png", "data": PNG}}],
                    "id": "call_1", "name": "screenshot", "response": {"output": "the screen"}}}],
                 "role": "user"},
            ])
        );
        // google-genai's key order inside the function response and its blob.
        let text = body.to_string();
        assert!(
            text.contains(
                r#"{"functionResponse":{"parts":[{"inlineData":{"mimeType":"image/png","data":"#
            ),
            "{text}"
        );
    }

    #[test]
    fn earlier_models_get_a_results_images_in_a_user_turn_of_their_own_after_it() {
        let body = image_body("gemini-2.5-flash");
        // Gemini refuses other parts beside function responses: the function response alone,
        // the bridge model turn, then the images.
        assert_eq!(
            body["contents"].as_array().unwrap()[2..],
            [
                json!({"parts": [
                    {"functionResponse": {"id": "call_1", "name": "screenshot",
                                          "response": {"output": "the screen"}}},
                ], "role": "user"}),
                json!({"parts": [{"text": super::super::body::STEER_BRIDGE}], "role": "model"}),
                json!({"parts": [{"inlineData": {"data": PNG, "mimeType": "image/png"}}],
                       "role": "user"}),
            ]
        );
        assert_eq!(body["contents"][0], user_turn());
    }

    #[test]
    fn a_url_of_unknown_type_is_an_error_on_vertex_only() {
        let h = history(json!([
            {"role": "user", "content": [
                {"type": "text", "text": "look"},
                {"type": "image_url", "image_url": {"url": "https://example.com/photo?id=7"}}]},
        ]));
        let body = encoded(&h, &Target::ai_studio(), "gemini-2.5-flash").unwrap();
        assert_eq!(
            body["contents"][0]["parts"][1],
            json!({"fileData": {"fileUri": "https://example.com/photo?id=7"}})
        );
        assert_eq!(
            encoded(&h, &Target::vertex("p", "global"), "gemini-2.5-flash").unwrap_err(),
            "message 0: the image https://example.com/photo?id=7 has no media type hermes can tell from its URL, and Vertex AI's fileData needs one (name the file .png, .jpg, .webp, .heic or .heif, or attach it as a data: URL)"
        );
        let gif = history(json!([
            {"role": "user", "content": [
                {"type": "image_url", "image_url": {"url": "data:image/gif;base64,R0lGODdh"}}]},
        ]));
        assert_eq!(
            encoded(&gif, &Target::ai_studio(), "gemini-2.5-flash").unwrap_err(),
            "message 0: the image data:image/gif;base64,… is of media type image/gif; Gemini takes image/png, image/jpeg, image/webp, image/heic, image/heif"
        );
    }
}
