//! Messages and their on-disk record encoding.
//!
//! A record is a frame: `len: u32 LE | crc: u32 LE | payload (len bytes)`, where `crc` is the
//! CRC32 (IEEE, as computed by `crc32fast`) of the four `len` bytes followed by the payload, so a
//! damaged length is caught as surely as damaged content. The payload, all integers little-endian:
//!
//! ```text
//! version u8 (= 1) | offset u64 | born_timestamp i64 | store_timestamp i64
//! key count u16 | per key: len u32, UTF-8 bytes
//! tag flag u8 (0 = none, 1 = present) | if present: len u32, UTF-8 bytes
//! property count u32 | per property: key len u32, key bytes, value len u32, value bytes
//! body len u32 | body bytes
//! ```
//!
//! The payload carries the message's queue offset, so a log stays meaningful after compaction
//! removes records (offsets never change) and the offset index can be rebuilt from the log alone.

use std::collections::BTreeMap;
use std::time::{SystemTime, UNIX_EPOCH};

use crate::error::{Result, StoreError};

/// Bytes before the payload: length and CRC.
pub(crate) const FRAME_HEADER_BYTES: usize = 8;
/// The only payload version written so far.
const RECORD_VERSION: u8 = 1;

/// A message as produced: what the caller gives to `append`.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct Message {
    /// Message keys (RocketMQ `KEYS`). The first key is the compaction key of compacted topics.
    pub keys: Vec<String>,
    /// Optional tag (RocketMQ `TAGS`), used for filtering by consumers.
    pub tag: Option<String>,
    /// User properties.
    pub properties: BTreeMap<String, String>,
    /// The payload. An empty body with a key is a tombstone in compacted topics.
    pub body: Vec<u8>,
    /// When the producer created the message, in milliseconds since the Unix epoch.
    pub born_timestamp: i64,
}

impl Message {
    /// A message with the given body, no keys, no tag and `born_timestamp` = now.
    pub fn new(body: impl Into<Vec<u8>>) -> Self {
        Message {
            body: body.into(),
            born_timestamp: now_ms(),
            ..Message::default()
        }
    }

    /// Adds a key.
    pub fn with_key(mut self, key: impl Into<String>) -> Self {
        self.keys.push(key.into());
        self
    }

    /// Sets the tag.
    pub fn with_tag(mut self, tag: impl Into<String>) -> Self {
        self.tag = Some(tag.into());
        self
    }

    /// Adds a user property.
    pub fn with_property(mut self, key: impl Into<String>, value: impl Into<String>) -> Self {
        self.properties.insert(key.into(), value.into());
        self
    }

    /// The compaction key: the first key, if any.
    pub fn compaction_key(&self) -> Option<&str> {
        self.keys.first().map(String::as_str)
    }

    /// Whether this message deletes its key in a compacted topic (a key and an empty body).
    pub fn is_tombstone(&self) -> bool {
        self.body.is_empty() && !self.keys.is_empty()
    }
}

/// A message as stored, with its position and store time.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct StoredMessage {
    /// The queue the message is in.
    pub queue: u32,
    /// Its offset in the queue (0-based, dense at append time; compaction leaves gaps).
    pub offset: u64,
    /// When the store appended it, in ms since the Unix epoch; never decreases within a queue.
    pub store_timestamp: i64,
    /// The message itself.
    pub message: Message,
}

/// Milliseconds since the Unix epoch (0 if the clock is before it).
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map(|d| i64::try_from(d.as_millis()).unwrap_or(i64::MAX))
        .unwrap_or(0)
}

/// Appends the frame of one record to `buf`; returns the frame's length in bytes.
pub(crate) fn encode(
    buf: &mut Vec<u8>,
    offset: u64,
    store_ts: i64,
    msg: &Message,
) -> Result<usize> {
    let start = buf.len();
    buf.extend_from_slice(&[0u8; FRAME_HEADER_BYTES]);
    buf.push(RECORD_VERSION);
    buf.extend_from_slice(&offset.to_le_bytes());
    buf.extend_from_slice(&msg.born_timestamp.to_le_bytes());
    buf.extend_from_slice(&store_ts.to_le_bytes());
    let key_count = u16::try_from(msg.keys.len()).map_err(|_| {
        StoreError::Invalid(format!("a message may have at most {} keys", u16::MAX))
    })?;
    buf.extend_from_slice(&key_count.to_le_bytes());
    for key in &msg.keys {
        put_bytes(buf, key.as_bytes(), "key")?;
    }
    match &msg.tag {
        None => buf.push(0),
        Some(tag) => {
            buf.push(1);
            put_bytes(buf, tag.as_bytes(), "tag")?;
        }
    }
    let prop_count = u32::try_from(msg.properties.len())
        .map_err(|_| StoreError::Invalid("too many message properties".into()))?;
    buf.extend_from_slice(&prop_count.to_le_bytes());
    for (k, v) in &msg.properties {
        put_bytes(buf, k.as_bytes(), "property name")?;
        put_bytes(buf, v.as_bytes(), "property value")?;
    }
    put_bytes(buf, &msg.body, "body")?;
    let payload_len = buf.len() - start - FRAME_HEADER_BYTES;
    let len = u32::try_from(payload_len)
        .map_err(|_| StoreError::Invalid("message larger than 4 GiB".into()))?;
    let len_bytes = len.to_le_bytes();
    let mut hasher = crc32fast::Hasher::new();
    hasher.update(&len_bytes);
    hasher.update(&buf[start + FRAME_HEADER_BYTES..]);
    let crc = hasher.finalize();
    buf[start..start + 4].copy_from_slice(&len_bytes);
    buf[start + 4..start + 8].copy_from_slice(&crc.to_le_bytes());
    Ok(buf.len() - start)
}

fn put_bytes(buf: &mut Vec<u8>, bytes: &[u8], what: &str) -> Result<()> {
    let len = u32::try_from(bytes.len())
        .map_err(|_| StoreError::Invalid(format!("message {what} larger than 4 GiB")))?;
    buf.extend_from_slice(&len.to_le_bytes());
    buf.extend_from_slice(bytes);
    Ok(())
}

/// The two header fields of a frame.
#[derive(Debug, Clone, Copy)]
pub(crate) struct FrameHeader {
    /// Payload length.
    pub len: u32,
    /// Expected CRC of length bytes + payload.
    pub crc: u32,
}

impl FrameHeader {
    /// Splits the first eight bytes of a frame.
    pub fn parse(bytes: [u8; FRAME_HEADER_BYTES]) -> Self {
        let [a, b, c, d, e, f, g, h] = bytes;
        FrameHeader {
            len: u32::from_le_bytes([a, b, c, d]),
            crc: u32::from_le_bytes([e, f, g, h]),
        }
    }

    /// The whole frame's size.
    pub fn frame_len(&self) -> u64 {
        FRAME_HEADER_BYTES as u64 + u64::from(self.len)
    }

    /// Whether `payload` matches the CRC.
    pub fn check(&self, payload: &[u8]) -> bool {
        let mut hasher = crc32fast::Hasher::new();
        hasher.update(&self.len.to_le_bytes());
        hasher.update(payload);
        hasher.finalize() == self.crc
    }
}

/// A decoded, CRC-checked record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Record {
    /// Queue offset.
    pub offset: u64,
    /// Store timestamp.
    pub store_ts: i64,
    /// The message.
    pub message: Message,
}

/// Decodes a payload whose CRC was already checked. Errors describe what is malformed.
pub(crate) fn decode_payload(payload: &[u8]) -> Result<Record, String> {
    let mut r = Reader { rest: payload };
    let version = r.u8()?;
    if version != RECORD_VERSION {
        return Err(format!("unknown record version {version}"));
    }
    let offset = r.u64()?;
    let born_timestamp = r.i64()?;
    let store_ts = r.i64()?;
    let key_count = r.u16()?;
    let mut keys = Vec::with_capacity(usize::from(key_count).min(64));
    for _ in 0..key_count {
        keys.push(r.string()?);
    }
    let tag = match r.u8()? {
        0 => None,
        1 => Some(r.string()?),
        other => return Err(format!("bad tag flag {other}")),
    };
    let prop_count = r.u32()?;
    let mut properties = BTreeMap::new();
    for _ in 0..prop_count {
        let k = r.string()?;
        let v = r.string()?;
        properties.insert(k, v);
    }
    let body = r.bytes()?.to_vec();
    if !r.rest.is_empty() {
        return Err(format!("{} trailing bytes in record", r.rest.len()));
    }
    Ok(Record {
        offset,
        store_ts,
        message: Message {
            keys,
            tag,
            properties,
            body,
            born_timestamp,
        },
    })
}

/// The offset and store timestamp of a payload, without decoding the rest (for index rebuilds).
pub(crate) fn peek_position(payload: &[u8]) -> Result<(u64, i64), String> {
    let mut r = Reader { rest: payload };
    let version = r.u8()?;
    if version != RECORD_VERSION {
        return Err(format!("unknown record version {version}"));
    }
    let offset = r.u64()?;
    let _born = r.i64()?;
    let store_ts = r.i64()?;
    Ok((offset, store_ts))
}

/// A bounds-checked little-endian cursor.
struct Reader<'a> {
    rest: &'a [u8],
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Result<&'a [u8], String> {
        if self.rest.len() < n {
            return Err(format!(
                "record truncated: needs {n} more bytes, has {}",
                self.rest.len()
            ));
        }
        let (head, tail) = self.rest.split_at(n);
        self.rest = tail;
        Ok(head)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], String> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N)?);
        Ok(out)
    }

    fn u8(&mut self) -> Result<u8, String> {
        Ok(self.array::<1>()?[0])
    }

    fn u16(&mut self) -> Result<u16, String> {
        Ok(u16::from_le_bytes(self.array()?))
    }

    fn u32(&mut self) -> Result<u32, String> {
        Ok(u32::from_le_bytes(self.array()?))
    }

    fn u64(&mut self) -> Result<u64, String> {
        Ok(u64::from_le_bytes(self.array()?))
    }

    fn i64(&mut self) -> Result<i64, String> {
        Ok(i64::from_le_bytes(self.array()?))
    }

    fn bytes(&mut self) -> Result<&'a [u8], String> {
        let len = usize::try_from(self.u32()?).map_err(|e| e.to_string())?;
        self.take(len)
    }

    fn string(&mut self) -> Result<String, String> {
        let bytes = self.bytes()?;
        String::from_utf8(bytes.to_vec()).map_err(|_| "string field is not UTF-8".to_string())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> Message {
        Message {
            keys: vec!["k1".into(), "k2".into()],
            tag: Some("TagA".into()),
            properties: BTreeMap::from([("a".into(), "1".into()), ("b".into(), "".into())]),
            body: b"hello".to_vec(),
            born_timestamp: 1_700_000_000_000,
        }
    }

    fn split(frame: &[u8]) -> (FrameHeader, &[u8]) {
        let mut hdr = [0u8; FRAME_HEADER_BYTES];
        hdr.copy_from_slice(&frame[..FRAME_HEADER_BYTES]);
        (FrameHeader::parse(hdr), &frame[FRAME_HEADER_BYTES..])
    }

    #[test]
    fn round_trip() {
        let mut buf = vec![0xAA];
        let n = encode(&mut buf, 42, 1_700_000_000_123, &sample()).unwrap();
        assert_eq!(n, buf.len() - 1);
        let (hdr, payload) = split(&buf[1..]);
        assert_eq!(hdr.frame_len(), n as u64);
        assert!(hdr.check(payload));
        let rec = decode_payload(payload).unwrap();
        assert_eq!(rec.offset, 42);
        assert_eq!(rec.store_ts, 1_700_000_000_123);
        assert_eq!(rec.message, sample());
        assert_eq!(peek_position(payload).unwrap(), (42, 1_700_000_000_123));
    }

    #[test]
    fn round_trip_without_tag_or_keys() {
        let msg = Message {
            born_timestamp: 5,
            ..Message::default()
        };
        let mut buf = Vec::new();
        encode(&mut buf, 0, 6, &msg).unwrap();
        let (_, payload) = split(&buf);
        assert_eq!(decode_payload(payload).unwrap().message, msg);
    }

    #[test]
    fn every_flipped_byte_is_detected() {
        let mut buf = Vec::new();
        encode(&mut buf, 7, 8, &sample()).unwrap();
        for i in 0..buf.len() {
            let mut bad = buf.clone();
            bad[i] ^= 0x01;
            let (hdr, payload) = split(&bad);
            let intact = payload.len() == hdr.len as usize && hdr.check(payload);
            assert!(!intact, "flip at byte {i} went unnoticed");
        }
    }

    #[test]
    fn decode_rejects_truncated_payload_without_panicking() {
        let mut buf = Vec::new();
        encode(&mut buf, 7, 8, &sample()).unwrap();
        let payload = &buf[FRAME_HEADER_BYTES..];
        for cut in 0..payload.len() {
            assert!(decode_payload(&payload[..cut]).is_err(), "cut at {cut}");
        }
    }

    #[test]
    fn tombstone_and_compaction_key() {
        let t = Message::new(Vec::new()).with_key("a").with_key("b");
        assert!(t.is_tombstone());
        assert_eq!(t.compaction_key(), Some("a"));
        assert!(!Message::new(Vec::new()).is_tombstone());
    }
}
