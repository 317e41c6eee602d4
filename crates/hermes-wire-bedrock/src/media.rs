//! Images on the Converse wire: chat-style `image_url` parts of user turns and tool results
//! become `{"image":{"format","source":{"bytes"}}}` blocks (botocore's `bedrock-runtime` service
//! model: `ImageBlock {format, source}`, `ImageFormat` `png|jpeg|gif|webp`, `ImageSource` a union
//! of `bytes` and `s3Location`; `ToolResultContentBlock` takes `text` and `image`).
//!
//! `bytes` is a blob: botocore base64-encodes the raw bytes (`serialize.py`,
//! `_serialize_type_blob`), so the data is decoded and encoded again with the standard alphabet
//! and padding, byte for byte what boto3 sends. Converse takes no image URL: a remote image is an
//! error before anything is sent.

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hermes_core::Message;

use super::pyjson::Json;
use hermes_providers::native::image::{self, Image, ImageError, Source};

/// `ImageFormat` by media type.
pub(super) const FORMATS: &[(&str, &str)] = &[
    ("image/png", "png"),
    ("image/jpeg", "jpeg"),
    ("image/gif", "gif"),
    ("image/webp", "webp"),
];

/// True when the message's content holds an `image_url` part.
pub(super) fn has_images(msg: &Message) -> bool {
    image::has_images(msg.content.as_ref())
}

/// `{"image": {"format", "source": {"bytes"}}}` of a data-URL image (its media type already
/// checked); a URL is an error.
pub(super) fn image_block(img: &Image) -> Result<Json, ImageError> {
    if let Source::Url(_) = img.source {
        return Err(ImageError(format!(
            "the image {} cannot be sent to Bedrock Converse, which takes an image's bytes or an S3 location, not a URL; attach the image as a data: URL instead",
            img.shown()
        )));
    }
    let format = FORMATS
        .iter()
        .find(|(t, _)| Some(*t) == img.media_type())
        .map_or("png", |(_, f)| f);
    let bytes = img.bytes().unwrap_or_default();
    Ok(Json::object([(
        "image",
        Json::object([
            ("format", Json::str(format)),
            (
                "source",
                Json::object([("bytes", Json::str(STANDARD.encode(bytes)))]),
            ),
        ]),
    )]))
}

#[cfg(test)]
mod tests {
    use hermes_core::route::ThinkingRequest;
    use hermes_core::{Message, RequestParts, Verdicts};

    use super::super::body::{Drops, Target, encode};
    use hermes_providers::testing::{PNG, decision, image_history};

    const BASE: &str = "https://bedrock-runtime.us-east-1.amazonaws.com";
    const HAIKU: &str = "anthropic.claude-3-haiku-20240307-v1:0";

    fn encoded(h: &[Message]) -> Result<String, String> {
        let decision = decision("bedrock", BASE, HAIKU);
        let verdicts = Verdicts::default();
        let parts = RequestParts::new(h, &decision, &verdicts).thinking(ThinkingRequest::Off);
        let target = Target {
            base_url: BASE.into(),
            max_tokens: None,
            account: None,
        };
        let out = encode(&parts, &target, &Drops::default()).map_err(|e| e.to_string())?;
        Ok(String::from_utf8(out.body).unwrap())
    }

    #[test]
    fn images_of_user_turns_and_tool_results_go_out_as_image_blocks_of_bytes() {
        let image = format!(r#"{{"image": {{"format": "png", "source": {{"bytes": "{PNG}"}}}}}}"#);
        assert_eq!(
            encoded(&image_history(false)).unwrap(),
            format!(
                r#"{{"messages": [{{"role": "user", "content": [{{"text": "What is in these?"}}, {image}]}}, {{"role": "assistant", "content": [{{"toolUse": {{"toolUseId": "call_1", "name": "screenshot", "input": {{}}}}}}]}}, {{"role": "user", "content": [{{"toolResult": {{"toolUseId": "call_1", "content": [{{"text": "the screen"}}, {image}]}}}}]}}], "system": [{{"text": "Be brief."}}], "additionalModelRequestFields": {{"thinking": {{"type": "disabled"}}}}}}"#
            )
        );
    }

    #[test]
    fn an_image_url_is_an_error_before_sending_naming_the_message() {
        assert_eq!(
            encoded(&image_history(true)).unwrap_err(),
            "message 1: the image https://example.com/cat.jpg cannot be sent to Bedrock Converse, which takes an image's bytes or an S3 location, not a URL; attach the image as a data: URL instead"
        );
    }
}
