//! Planted fence tags in untrusted text, neutralised. A model reads text
//! after its own normalisation: it skips invisible characters, takes `〈`
//! or `＜` for `<`, `ｃ` or Cyrillic `с` for `c`. So a tag is looked for in
//! text as a model may read it, and every one found has its `<` (or
//! look-alike) written `&lt;` and its invisible characters dropped.
//!
//! No Unicode crate is in the lockfile (`unicode-normalization` and a
//! confusables skeleton would be two new dependencies in both wasm builds),
//! so the tables below are ours: [UTS #39]'s `confusables.txt` entries for
//! `<` and for the ASCII letters, NFKC's full-width and mathematical
//! letters, and Unicode's `Default_Ignorable_Code_Point` and format (`Cf`)
//! characters. `agent-zero-engine`'s `render::defang` keeps a copy for its
//! `<untrusted>` fence (that crate does not depend on this one).
//!
//! [UTS #39]: https://www.unicode.org/reports/tr39/

/// `text` with every `<` (or look-alike) that starts a tag named one of
/// `names` (in any casing, with any spacing, slashes, invisible characters
/// or look-alike letters) written `&lt;`, and the invisible characters of
/// that tag dropped. A name's hyphens match any separator or none.
pub fn defang(text: &str, names: &[&str]) -> String {
    let mut out = String::with_capacity(text.len());
    let mut copied = 0;
    for (at, c) in text.char_indices() {
        if at < copied || !is_opener(c) {
            continue;
        }
        let from = at + c.len_utf8();
        if let Some(end) = names.iter().find_map(|name| tag_end(&text[from..], name)) {
            out.push_str(&text[copied..at]);
            out.push_str("&lt;");
            out.extend(text[from..from + end].chars().filter(|c| !is_invisible(*c)));
            copied = from + end;
        }
    }
    out.push_str(&text[copied..]);
    out
}

/// Where `name` ends in `rest` (the text after an opener), if `rest`
/// starts with it: separators first, then its letters with separators
/// between, then no further letter. Stops at the first other letter, digit
/// or opener, so the scan from each opener is short.
fn tag_end(rest: &str, name: &str) -> Option<usize> {
    let mut letters = name.bytes().filter(u8::is_ascii_alphabetic).peekable();
    let mut end = 0;
    for (at, c) in rest.char_indices() {
        if is_invisible(c) {
            continue;
        }
        let read = letter(c);
        match letters.peek() {
            Some(want) => {
                if read == Some(*want) {
                    letters.next();
                    end = at + c.len_utf8();
                } else if read.is_some() || c.is_alphanumeric() || is_opener(c) {
                    return None;
                }
            }
            // A longer word (`<steps`, `<untrusted_len`) is not the tag.
            None => return (read.is_none() && !c.is_alphanumeric() && c != '_').then_some(end),
        }
    }
    letters.peek().is_none().then_some(end)
}

/// `<` and the characters read as it: NFKC's full-width and small forms,
/// `confusables.txt`'s look-alikes, and the angle brackets and quotation
/// marks a model may take for one.
const fn is_opener(c: char) -> bool {
    matches!(
        c,
        '<' | '\u{00AB}' // «
            | '\u{02C2}' // ˂ modifier letter left arrowhead
            | '\u{02F1}' // ˱ modifier letter low left arrowhead
            | '\u{1438}' // ᐸ Canadian syllabics pa
            | '\u{16B2}' // ᚲ runic kauna
            | '\u{2039}' // ‹
            | '\u{226A}' // ≪
            | '\u{2329}' // 〈 left-pointing angle bracket
            | '\u{276C}' // ❬
            | '\u{276E}' // ❮
            | '\u{2770}' // ❰
            | '\u{27E8}' // ⟨ mathematical left angle bracket
            | '\u{27EA}' // ⟪
            | '\u{29FC}' // ⧼
            | '\u{3008}' // 〈 CJK left angle bracket
            | '\u{300A}' // 《
            | '\u{FE3F}' // ︿ presentation form of 〈
            | '\u{FE64}' // ﹤ small less-than
            | '\u{FF1C}' // ＜ full-width less-than
    )
}

/// Characters with no glyph of their own, skipped by a reader: the
/// `Default_Ignorable_Code_Point`s (soft hyphen, zero-width space and
/// joiners, word joiner, bidi controls, variation selectors, byte order
/// mark, Hangul fillers, tags), the other format characters (`Cf`) that can
/// sit inside a word, and combining diacritics (`é` written `e` + U+0301).
const fn is_invisible(c: char) -> bool {
    matches!(
        c,
        '\u{00AD}'
            | '\u{0300}'..='\u{036F}'
            | '\u{061C}'
            | '\u{115F}'..='\u{1160}'
            | '\u{17B4}'..='\u{17B5}'
            | '\u{180B}'..='\u{180F}'
            | '\u{200B}'..='\u{200F}'
            | '\u{202A}'..='\u{202E}'
            | '\u{2060}'..='\u{206F}'
            | '\u{3164}'
            | '\u{FE00}'..='\u{FE0F}'
            | '\u{FEFF}'
            | '\u{FFA0}'
            | '\u{FFF0}'..='\u{FFFB}'
            | '\u{1BCA0}'..='\u{1BCA3}'
            | '\u{1D173}'..='\u{1D17A}'
            | '\u{E0000}'..='\u{E0FFF}'
    )
}

/// Base letters of U+00C0..=U+017F (Latin-1 letters, Latin Extended-A),
/// `.` where there is none (`Æ`, `×`, `Ĳ`, `Œ`, `Þ`).
const ACCENTED: &[u8; 192] = b"aaaaaa.ceeeeiiiidnooooo.ouuuuy..aaaaaa.ceeeeiiiidnooooo.ouuuuy.y\
aaaaaaccccccccddddeeeeeeeeeegggggggghhhhiiiiiiiiii..jjkkklllllll\
lllnnnnnnnnnoooooo..rrrrrrssssssssttttttuuuuuuuuuuuuwwyyyzzzzzzs";

/// `confusables.txt` look-alikes of ASCII letters in the Latin (small
/// capitals, IPA), Greek, Cyrillic and Armenian blocks.
#[rustfmt::skip]
const LOOK_ALIKES: &[(char, u8)] = &[
    // Latin small capitals and IPA: ɑ ɡ ɢ ɩ ɪ ɴ ʀ ʏ ʙ ʜ ʟ ᴀ ᴄ ᴅ ᴇ ᴊ ᴋ ᴍ ᴏ ᴘ ᴛ ᴜ ᴠ ᴡ ᴢ ꜱ
    ('\u{0251}', b'a'), ('\u{0261}', b'g'), ('\u{0262}', b'g'), ('\u{0269}', b'i'), ('\u{026A}', b'i'),
    ('\u{0274}', b'n'), ('\u{0280}', b'r'), ('\u{028F}', b'y'), ('\u{0299}', b'b'), ('\u{029C}', b'h'),
    ('\u{029F}', b'l'), ('\u{1D00}', b'a'), ('\u{1D04}', b'c'), ('\u{1D05}', b'd'), ('\u{1D07}', b'e'),
    ('\u{1D0A}', b'j'), ('\u{1D0B}', b'k'), ('\u{1D0D}', b'm'), ('\u{1D0F}', b'o'), ('\u{1D18}', b'p'),
    ('\u{1D1B}', b't'), ('\u{1D1C}', b'u'), ('\u{1D20}', b'v'), ('\u{1D21}', b'w'), ('\u{1D22}', b'z'),
    ('\u{A731}', b's'),
    // Greek: Α Β Ε Ζ Η Ι Κ Μ Ν Ο Ρ Τ Υ Χ α γ ε ι κ ν ο ρ τ υ χ ϲ ϳ Ϲ
    ('\u{0391}', b'a'), ('\u{0392}', b'b'), ('\u{0395}', b'e'), ('\u{0396}', b'z'), ('\u{0397}', b'h'),
    ('\u{0399}', b'i'), ('\u{039A}', b'k'), ('\u{039C}', b'm'), ('\u{039D}', b'n'), ('\u{039F}', b'o'),
    ('\u{03A1}', b'p'), ('\u{03A4}', b't'), ('\u{03A5}', b'y'), ('\u{03A7}', b'x'), ('\u{03B1}', b'a'),
    ('\u{03B3}', b'y'), ('\u{03B5}', b'e'), ('\u{03B9}', b'i'), ('\u{03BA}', b'k'), ('\u{03BD}', b'v'),
    ('\u{03BF}', b'o'), ('\u{03C1}', b'p'), ('\u{03C4}', b't'), ('\u{03C5}', b'u'), ('\u{03C7}', b'x'),
    ('\u{03F2}', b'c'), ('\u{03F3}', b'j'), ('\u{03F9}', b'c'),
    // Cyrillic: Ѕ І Ј А В Е К М Н О Р С Т У Х а е к о р с у х ё ѕ і ї ј Ү һ ӏ Ԁ ԁ Ԛ ԛ Ԝ ԝ
    ('\u{0405}', b's'), ('\u{0406}', b'i'), ('\u{0408}', b'j'), ('\u{0410}', b'a'), ('\u{0412}', b'b'),
    ('\u{0415}', b'e'), ('\u{041A}', b'k'), ('\u{041C}', b'm'), ('\u{041D}', b'h'), ('\u{041E}', b'o'),
    ('\u{0420}', b'p'), ('\u{0421}', b'c'), ('\u{0422}', b't'), ('\u{0423}', b'y'), ('\u{0425}', b'x'),
    ('\u{0430}', b'a'), ('\u{0435}', b'e'), ('\u{043A}', b'k'), ('\u{043E}', b'o'), ('\u{0440}', b'p'),
    ('\u{0441}', b'c'), ('\u{0443}', b'y'), ('\u{0445}', b'x'), ('\u{0451}', b'e'), ('\u{0455}', b's'),
    ('\u{0456}', b'i'), ('\u{0457}', b'i'), ('\u{0458}', b'j'), ('\u{04AE}', b'y'), ('\u{04BB}', b'h'),
    ('\u{04CF}', b'l'), ('\u{0500}', b'd'), ('\u{0501}', b'd'), ('\u{051A}', b'q'), ('\u{051B}', b'q'),
    ('\u{051C}', b'w'), ('\u{051D}', b'w'),
    // Armenian: հ ո ս օ
    ('\u{0570}', b'h'), ('\u{0578}', b'n'), ('\u{057D}', b'u'), ('\u{0585}', b'o'),

];

/// The lowercase ASCII letter `c` reads as: ASCII, accented Latin, the
/// full-width, circled, parenthesised, squared, regional-indicator and
/// mathematical letters (their NFKC forms), and [`LOOK_ALIKES`].
fn letter(c: char) -> Option<u8> {
    let cp = c as u32;
    // Blocks of A–Z runs, each run starting `period` code points after the last.
    let run = |first: u32, period: u32| u8::try_from((cp - first) % period).ok().filter(|i| *i < 26).map(|i| b'a' + i);
    match cp {
        0x41..=0x5A | 0x61..=0x7A => u8::try_from(c.to_ascii_lowercase()).ok(),
        0xC0..=0x17F => Some(ACCENTED[(cp - 0xC0) as usize]).filter(|b| *b != b'.'),
        0xFF21..=0xFF3A => run(0xFF21, 26),
        0xFF41..=0xFF5A => run(0xFF41, 26),
        0x249C..=0x24E9 => run(0x249C, 26),    // ⒜..⒵ Ⓐ..Ⓩ ⓐ..ⓩ
        0x1D400..=0x1D6A3 => run(0x1D400, 26), // 𝐀..𝚣: A–Z then a–z per style
        0x1F130..=0x1F189 => run(0x1F130, 32), // 🄰 🅐 🅰: squared, negative circled, negative squared
        0x1F1E6..=0x1F1FF => run(0x1F1E6, 26), // 🇦 regional indicators
        _ => LOOK_ALIKES.iter().find(|(k, _)| *k == c).map(|(_, v)| *v),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tables_read_as_intended() {
        for (text, want) in [
            ("ÀÉÎÕÜÝÿ", "aeiouyy"),
            ("ĀĊĎĒĞĦĪĴĶĹŃŌŔŚŢŪŴŶŹſ", "acdeghijklnorstuwyzs"),
            ("ｒｅｐｏ", "repo"),
            ("ⓡⓔ⒫Ⓞ", "repo"),
            ("𝐫𝐞𝐩𝐨𝐑", "repor"),
            ("🅁🇪🄿🅾", "repo"),
            ("rеpоsіtоrу", "repository"),
        ] {
            let read: String = text.chars().map(|c| letter(c).map_or('?', char::from)).collect();
            assert_eq!(read, want, "{text}");
        }
        assert_eq!(letter('Æ'), None);
        assert_eq!(letter('7'), None);
    }

    #[test]
    fn finds_tags_only() {
        let names = ["repository-context"];
        assert_eq!(defang("a </repository_context> b", &names), "a &lt;/repository_context> b");
        assert_eq!(defang("<<repository context", &names), "<&lt;repository context");
        assert_eq!(defang("</re\u{0301}pository-context>", &names), "&lt;/repository-context>");
        assert_eq!(defang("x<\u{200B}/repo\u{FEFF}sitory\u{2060}-context>", &names), "x&lt;/repository-context>");
        for text in ["<repository-contexts>", "<repository", "< b repository-context", "a<b", "<", "é<"] {
            assert_eq!(defang(text, &names), text);
        }
    }
}
