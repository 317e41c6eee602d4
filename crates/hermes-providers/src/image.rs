//! Chat-style content parts read once for every native wire: text parts and `image_url` parts
//! (`data:` URLs and `http(s)` URLs), so that each wire maps an image to its own form from one
//! parser, and refuses what it cannot send with one kind of error.
//!
//! The chat-completions shape (`{"type":"image_url","image_url":{"url":…,"detail":…}}`) is the
//! canonical history's (openai-python `ChatCompletionContentPartImageParam`: `image_url.url`
//! "Either a URL of the image or the base64 encoded image data", `detail` `auto|low|high`); a
//! bare string in `image_url` is read as the URL too.

use std::fmt;

use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use hermes_core::{Message, RawJson};
use serde::Deserialize;
use serde_json::value::RawValue;

/// One part of a content array, in stored order.
pub enum Piece<'a> {
    /// A text part: its `text` string literal as stored, and the whole part as stored.
    Text {
        /// The `text` string literal, as stored.
        text: &'a RawValue,
        /// The whole part, as stored.
        part: &'a RawValue,
    },
    /// An `image_url` part.
    Image(Image),
    /// Any other part (or a text part whose `text` is not a string), as stored.
    Other(&'a RawValue),
}

/// An image of a chat-style `image_url` part.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Image {
    /// The URL as stored (a `data:` URL whole).
    pub url: String,
    /// Where the bytes are.
    pub source: Source,
    /// `image_url.detail`, when stored.
    pub detail: Option<String>,
}

/// Where an image's bytes are.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Source {
    /// A base64 `data:` URL: its media type (lower case) and its base64 text, as stored.
    Data {
        /// The media type, lower case.
        media_type: String,
        /// The base64 text, as stored.
        data: String,
    },
    /// An `http://` or `https://` URL.
    Url(String),
}

impl Image {
    /// The media type: a data URL's own, else the one a URL's file extension names (`.png`,
    /// `.jpg`/`.jpeg`, `.gif`, `.webp`, `.heic`, `.heif`), else `None`.
    pub fn media_type(&self) -> Option<&str> {
        match &self.source {
            Source::Data { media_type, .. } => Some(media_type),
            Source::Url(url) => {
                let path = url.split(['?', '#']).next().unwrap_or("");
                let ext = path.rsplit_once('.')?.1.to_ascii_lowercase();
                Some(match ext.as_str() {
                    "png" => "image/png",
                    "jpg" | "jpeg" => "image/jpeg",
                    "gif" => "image/gif",
                    "webp" => "image/webp",
                    "heic" => "image/heic",
                    "heif" => "image/heif",
                    _ => return None,
                })
            }
        }
    }

    /// The image's bytes (a data URL's, decoded; `None` for a URL).
    pub fn bytes(&self) -> Option<Vec<u8>> {
        match &self.source {
            Source::Data { data, .. } => STANDARD.decode(data).ok(),
            Source::Url(_) => None,
        }
    }

    /// The URL for an error message: a data URL by its media type only, a long URL cut.
    pub fn shown(&self) -> String {
        match &self.source {
            Source::Data { media_type, .. } => format!("data:{media_type};base64,…"),
            Source::Url(url) if url.chars().count() > 80 => {
                format!("{}…", url.chars().take(80).collect::<String>())
            }
            Source::Url(url) => url.clone(),
        }
    }

    /// `Err` naming the media type when it is not one of `accepted` (what `wire` takes).
    pub fn check_media_type(&self, wire: &str, accepted: &[&str]) -> Result<(), ImageError> {
        match self.media_type() {
            Some(t) if accepted.contains(&t) => Ok(()),
            Some(t) => Err(ImageError(format!(
                "the image {} is of media type {t}; {wire} takes {}",
                self.shown(),
                accepted.join(", ")
            ))),
            None => Err(ImageError(format!(
                "the image {} has no media type hermes can tell from its URL; {wire} takes {}",
                self.shown(),
                accepted.join(", ")
            ))),
        }
    }
}

/// Why a content part cannot be sent; a wire puts the message index in front (`message 3: …`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ImageError(pub String);

impl ImageError {
    /// The error as the wire reports it: `message {index}: {what}`.
    pub fn at(&self, index: usize) -> String {
        format!("message {index}: {}", self.0)
    }
}

impl fmt::Display for ImageError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// True when `content` is an array holding an `image_url` part (the cheap test every wire runs
/// before taking the image path; a text-only array keeps its old rendering).
pub fn has_images(content: Option<&RawJson>) -> bool {
    content.is_some_and(|c| c.get().starts_with('[') && c.get().contains("\"image_url\""))
}

/// The parts of message `index`'s content in stored order (none when it is not an array), every
/// `data:` image checked against `media_types`, what `wire` takes (a URL's type is the
/// provider's to judge); an error is `message {index}: …`.
pub fn message_pieces<'m>(
    msg: &'m Message,
    index: usize,
    wire: &str,
    media_types: &[&str],
) -> Result<Vec<Piece<'m>>, String> {
    let Some(content) = msg.content.as_ref() else {
        return Ok(Vec::new());
    };
    let pieces = pieces(content)
        .map_err(|e| e.at(index))?
        .unwrap_or_default();
    for piece in &pieces {
        if let Piece::Image(img) = piece
            && let Source::Data { .. } = img.source
        {
            img.check_media_type(wire, media_types)
                .map_err(|e| e.at(index))?;
        }
    }
    Ok(pieces)
}

#[derive(Deserialize, Default)]
#[serde(default)]
struct RawPart<'a> {
    #[serde(rename = "type")]
    kind: Option<String>,
    #[serde(borrow)]
    text: Option<&'a RawValue>,
    #[serde(borrow)]
    image_url: Option<&'a RawValue>,
}

#[derive(Deserialize)]
struct ImageUrl {
    url: Option<String>,
    #[serde(default)]
    detail: Option<String>,
}

/// The parts of a content array in stored order; `Ok(None)` when `content` is not an array.
/// An `image_url` part without a usable URL, a `data:` URL that is not base64 or whose base64
/// does not decode, and any scheme other than `data`, `http` and `https` are errors.
pub fn pieces(content: &RawJson) -> Result<Option<Vec<Piece<'_>>>, ImageError> {
    if !content.get().starts_with('[') {
        return Ok(None);
    }
    let parts: Vec<&RawValue> = serde_json::from_str(content.get())
        .map_err(|e| ImageError(format!("the content is not an array of parts: {e}")))?;
    let mut out = Vec::with_capacity(parts.len());
    for (k, raw) in parts.into_iter().enumerate() {
        let Ok(part) = serde_json::from_str::<RawPart<'_>>(raw.get()) else {
            out.push(Piece::Other(raw));
            continue;
        };
        match part.kind.as_deref() {
            Some("image_url") => out.push(Piece::Image(image(k, part.image_url)?)),
            None | Some("text" | "input_text" | "output_text") => match part.text {
                Some(text) if text.get().starts_with('"') => {
                    out.push(Piece::Text { text, part: raw });
                }
                _ => out.push(Piece::Other(raw)),
            },
            Some(_) => out.push(Piece::Other(raw)),
        }
    }
    Ok(Some(out))
}

/// Reads part `k`'s `image_url` (an object with `url` and `detail`, or the URL string).
fn image(k: usize, value: Option<&RawValue>) -> Result<Image, ImageError> {
    let missing = || {
        ImageError(format!(
            "content part {k} is an `image_url` part without a URL"
        ))
    };
    let value = value.ok_or_else(missing)?;
    let (url, detail) = match serde_json::from_str::<String>(value.get()) {
        Ok(url) => (url, None),
        Err(_) => {
            let obj: ImageUrl = serde_json::from_str(value.get()).map_err(|_| missing())?;
            (obj.url.ok_or_else(missing)?, obj.detail)
        }
    };
    let source = source(k, &url)?;
    Ok(Image {
        url,
        source,
        detail,
    })
}

/// A URL's source: `data:[<media type>][;params];base64,<data>` (RFC 2397), or http(s).
fn source(k: usize, url: &str) -> Result<Source, ImageError> {
    let lower = url.get(..8).unwrap_or(url).to_ascii_lowercase();
    if lower.starts_with("https://") || lower.starts_with("http://") {
        return Ok(Source::Url(url.to_owned()));
    }
    let Some(rest) = url.get(..5).filter(|s| s.eq_ignore_ascii_case("data:")) else {
        let scheme = url.split_once(':').map_or(url, |(s, _)| s);
        return Err(ImageError(format!(
            "content part {k}: an image URL must be a data: URL or an http(s) URL, not `{}:`",
            scheme.chars().take(20).collect::<String>()
        )));
    };
    let body = &url[rest.len()..];
    let Some((meta, data)) = body.split_once(',') else {
        return Err(ImageError(format!(
            "content part {k}: the data: URL has no `,` before its data"
        )));
    };
    let mut params = meta.split(';');
    let media_type = params.next().unwrap_or("").trim().to_ascii_lowercase();
    if !params.any(|p| p.trim().eq_ignore_ascii_case("base64")) {
        return Err(ImageError(format!(
            "content part {k}: the data: URL is not base64 (`;base64,` is missing)"
        )));
    }
    if media_type.is_empty() {
        return Err(ImageError(format!(
            "content part {k}: the data: URL names no media type"
        )));
    }
    if let Err(e) = STANDARD.decode(data) {
        return Err(ImageError(format!(
            "content part {k}: the data: URL's data is not valid base64 ({e})"
        )));
    }
    Ok(Source::Data {
        media_type,
        data: data.to_owned(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A 1×1 PNG.
    const PNG: &str = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";

    fn parse(text: &str) -> Result<Vec<String>, String> {
        let raw = RawJson::from_text(text).unwrap();
        let pieces = pieces(&raw).map_err(|e| e.0)?.unwrap();
        Ok(pieces
            .iter()
            .map(|p| match p {
                Piece::Text { text, .. } => format!("text {}", text.get()),
                Piece::Image(i) => format!("image {:?} {:?}", i.source, i.detail),
                Piece::Other(raw) => format!("other {}", raw.get()),
            })
            .collect())
    }

    #[test]
    fn data_urls_and_https_urls_are_read_in_order() {
        let text = format!(
            r#"[{{"type":"text","text":"look"}},{{"type":"image_url","image_url":{{"url":"data:Image/PNG;base64,{PNG}","detail":"high"}}}},{{"type":"image_url","image_url":"https://example.com/a.jpg"}},{{"type":"input_audio"}}]"#
        );
        let got = parse(&text).unwrap();
        assert_eq!(got[0], r#"text "look""#);
        assert_eq!(
            got[1],
            format!(r#"image Data {{ media_type: "image/png", data: "{PNG}" }} Some("high")"#)
        );
        assert_eq!(got[2], r#"image Url("https://example.com/a.jpg") None"#);
        assert_eq!(got[3], r#"other {"type":"input_audio"}"#);
    }

    #[test]
    fn unusable_images_are_errors_naming_the_part() {
        let cases = [
            (
                r#"[{"type":"image_url","image_url":{"url":"file:///etc/passwd"}}]"#,
                "content part 0: an image URL must be a data: URL or an http(s) URL, not `file:`",
            ),
            (
                r#"[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:image/png,abc"}}]"#,
                "content part 1: the data: URL is not base64 (`;base64,` is missing)",
            ),
            (
                r#"[{"type":"image_url","image_url":{"detail":"low"}}]"#,
                "content part 0 is an `image_url` part without a URL",
            ),
        ];
        for (text, want) in cases {
            assert_eq!(parse(text).unwrap_err(), want);
        }
        let bad = parse(
            r#"[{"type":"image_url","image_url":{"url":"data:image/png;base64,not base64!"}}]"#,
        )
        .unwrap_err();
        assert!(
            bad.starts_with("content part 0: the data: URL's data is not valid base64"),
            "{bad}"
        );
    }

    #[test]
    fn media_types_come_from_the_data_url_or_the_url_extension() {
        let img = |url: &str| Image {
            url: url.into(),
            source: source(0, url).unwrap(),
            detail: None,
        };
        assert_eq!(
            img("https://x.test/a.JPEG?s=1").media_type(),
            Some("image/jpeg")
        );
        assert_eq!(img("https://x.test/photo").media_type(), None);
        let gif = img("data:image/gif;base64,R0lGODdh");
        assert_eq!(gif.media_type(), Some("image/gif"));
        assert_eq!(
            gif.check_media_type("X", &["image/png"]).unwrap_err().at(4),
            "message 4: the image data:image/gif;base64,… is of media type image/gif; X takes image/png"
        );
    }
}
