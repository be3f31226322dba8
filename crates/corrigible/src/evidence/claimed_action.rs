//! Claims of an action in an answer: "I have sent the email", "I'll order the pizza", "the
//! lights have been turned off". Such a claim needs a tool that did it; the engine checks that
//! a tool able to act (not declared read-only) succeeded in the run.
//!
//! Only unambiguous forms are read, because a correct answer is never to be sent back: a
//! first-person subject directly followed by a completed, ongoing or promised action of a
//! short list of side-effecting verbs, or a perfect passive (`has been sent`). A negation
//! (`I have not sent`, `I can't book`), a modal (`I could order`), text in double quotes and
//! answers to a request to write something (`Draft an email saying…`) are left alone.

/// How an answer claims an action.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimKind {
    /// The answer's own voice says it acted or will act: `I have sent`, `I'll book`.
    FirstPerson,
    /// A perfect passive says an action was done: `has been sent`. A read-only tool can
    /// report such a state (a parcel that has been delivered), so this kind is supported by
    /// any successful call.
    Passive,
}

/// An action an answer says was carried out.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimedAction {
    /// The words that claim it, as written in lower case (`i have sent`).
    pub phrase: String,
    /// The action's verb in its base form (`send`): the capability a tool would need.
    pub verb: &'static str,
    /// How the claim is made.
    pub kind: ClaimKind,
}

/// A side-effecting verb: its base form, its other forms, and the words one of which must
/// follow it within a few words (a particle or an object), when the verb alone is ambiguous.
struct Verb {
    base: &'static str,
    forms: &'static [&'static str],
    needs: &'static [&'static str],
}

/// Most words between a verb and the word it needs.
const NEAR: usize = 6;

const VERBS: &[Verb] = &[
    verb("send", &["send", "sent", "sending", "sends"], &[]),
    verb("email", &["email", "emailed", "emailing", "e-mailed"], &[]),
    verb("text", &["text", "texted", "texting"], &[]),
    verb("message", &["message", "messaged", "messaging"], &[]),
    verb("forward", &["forward", "forwarded", "forwarding"], &[]),
    verb("book", &["book", "booked", "booking"], &[]),
    verb("reserve", &["reserve", "reserved", "reserving"], &[]),
    verb("order", &["order", "ordered", "ordering"], &[]),
    verb("purchase", &["purchase", "purchased", "purchasing"], &[]),
    verb("buy", &["buy", "bought", "buying"], &[]),
    verb("pay", &["pay", "paid", "paying"], &[]),
    verb(
        "transfer",
        &["transfer", "transferred", "transferring"],
        &[],
    ),
    verb("schedule", &["schedule", "scheduled", "scheduling"], &[]),
    verb(
        "reschedule",
        &["reschedule", "rescheduled", "rescheduling"],
        &[],
    ),
    verb(
        "cancel",
        &["cancel", "cancelled", "canceled", "cancelling", "canceling"],
        &[],
    ),
    verb("delete", &["delete", "deleted", "deleting"], &[]),
    verb(
        "turn",
        &["turn", "turned", "turning"],
        &["on", "off", "up", "down"],
    ),
    verb(
        "switch",
        &["switch", "switched", "switching"],
        &["on", "off"],
    ),
    verb("dim", &["dim", "dimmed", "dimming"], &["light", "lights"]),
    verb("lock", &["lock", "locked", "locking"], &[]),
    verb("unlock", &["unlock", "unlocked", "unlocking"], &[]),
    verb("post", &["post", "posted", "posting"], &[]),
    verb("publish", &["publish", "published", "publishing"], &[]),
    verb("tweet", &["tweet", "tweeted", "tweeting"], &[]),
    verb("submit", &["submit", "submitted", "submitting"], &[]),
    verb("notify", &["notify", "notified", "notifying"], &[]),
    verb(
        "remind",
        &["remind", "reminded"],
        &["you", "him", "her", "them"],
    ),
    verb(
        "set",
        &["set", "setting"],
        &["alarm", "reminder", "timer", "thermostat"],
    ),
    verb("place", &["place", "placed", "placing"], &["order"]),
    verb(
        "add",
        &["add", "added", "adding"],
        &[
            "calendar", "cart", "list", "basket", "playlist", "contacts", "agenda",
        ],
    ),
    verb(
        "create",
        &["create", "created", "creating"],
        &[
            "folder", "file", "event", "reminder", "alarm", "note", "account", "ticket",
        ],
    ),
    verb("save", &["save", "saved", "saving"], &[]),
    verb(
        "share",
        &["share", "shared", "sharing"],
        &["location", "file", "document", "photo"],
    ),
    verb("upload", &["upload", "uploaded", "uploading"], &[]),
    verb("install", &["install", "installed", "installing"], &[]),
    verb(
        "subscribe",
        &["subscribe", "subscribed", "subscribing"],
        &[],
    ),
    verb(
        "unsubscribe",
        &["unsubscribe", "unsubscribed", "unsubscribing"],
        &[],
    ),
    verb(
        "register",
        &["register", "registered", "registering"],
        &["you", "your", "for"],
    ),
    verb("invite", &["invite", "invited", "inviting"], &[]),
    verb(
        "call",
        &["call", "called", "calling"],
        &["taxi", "cab", "uber", "ambulance"],
    ),
    verb(
        "confirm",
        &["confirm", "confirmed"],
        &["booking", "reservation", "appointment", "order"],
    ),
];

const fn verb(
    base: &'static str,
    forms: &'static [&'static str],
    needs: &'static [&'static str],
) -> Verb {
    Verb { base, forms, needs }
}

/// Words that may stand between a first-person subject and its verb.
const ADVERBS: &[&str] = &[
    "just",
    "already",
    "now",
    "successfully",
    "also",
    "then",
    "quickly",
    "went",
    "gone",
    "ahead",
    "and",
];
/// Words before `I` that make what follows a condition, not a claim (`if I buy 3 apples`).
const CONDITIONS: &[&str] = &[
    "if", "when", "once", "after", "before", "until", "unless", "whether", "suppose", "say",
];
const AUXILIARIES: &[&str] = &[
    "have", "has", "had", "will", "shall", "am", "are", "was", "were",
];
const PASSIVE_AUXILIARIES: &[&str] = &["has", "have", "had"];

/// Words of a request that asks for text to be written: its first person is the user's.
const WRITING: &[&str] = &[
    "write",
    "draft",
    "compose",
    "rewrite",
    "rephrase",
    "translate",
    "sentence",
    "example",
    "template",
    "reply",
    "respond",
    "story",
    "poem",
    "letter",
    "script",
    "dialogue",
    "message",
];

/// The actions `answer` claims were carried out or will be, for a final answer to `request`.
pub fn claimed_actions(answer: &str, request: &str) -> Vec<ClaimedAction> {
    let request = words(request);
    if request.iter().any(|w| WRITING.contains(&w.as_str())) {
        return Vec::new();
    }
    let mut claims = Vec::new();
    for clause in clauses(&unquoted(answer)) {
        let tokens = words(&clause);
        for i in 0..tokens.len() {
            if let Some(claim) = first_person(&tokens, i).or_else(|| passive(&tokens, i)) {
                claims.push(claim);
            }
        }
        if let Some(claim) = status(&tokens) {
            claims.push(claim);
        }
    }
    claims
}

/// A first-person claim whose subject is `tokens[i]`.
fn first_person(tokens: &[String], i: usize) -> Option<ClaimedAction> {
    if tokens[i] != "i"
        || i.checked_sub(1)
            .is_some_and(|p| CONDITIONS.contains(&tokens[p].as_str()))
    {
        return None;
    }
    let mut j = i + 1;
    let mut aux = false;
    let mut going = false;
    while j < tokens.len() {
        let word = tokens[j].as_str();
        if ADVERBS.contains(&word) {
            j += 1;
        } else if AUXILIARIES.contains(&word) && !aux {
            aux = true;
            j += 1;
        } else if word == "going" && tokens.get(j + 1).is_some_and(|w| w == "to") && !going {
            going = true;
            j += 2;
        } else {
            break;
        }
    }
    let (verb, end) = verb_at(tokens, j, j + 1)?;
    Some(ClaimedAction {
        phrase: tokens[i..end].join(" "),
        verb,
        kind: ClaimKind::FirstPerson,
    })
}

/// A perfect passive claim (`have been turned off`) whose auxiliary is `tokens[i]`.
fn passive(tokens: &[String], i: usize) -> Option<ClaimedAction> {
    if !PASSIVE_AUXILIARIES.contains(&tokens[i].as_str())
        || tokens.get(i + 1).is_none_or(|w| w != "been")
    {
        return None;
    }
    let mut j = i + 2;
    while tokens
        .get(j)
        .is_some_and(|w| matches!(w.as_str(), "successfully" | "now" | "already" | "just"))
    {
        j += 1;
    }
    let (verb, end) = verb_at(tokens, j, i.saturating_sub(NEAR))?;
    Some(ClaimedAction {
        phrase: tokens[i..end].join(" "),
        verb,
        kind: ClaimKind::Passive,
    })
}

/// A status line that opens a clause (`Email sent successfully`, `Note saved`, `Alarm set for
/// 7 am`): a short noun phrase, a past participle, and a short tail that opens with a
/// preposition and holds no verb of its own, so that `Letters sent to Santa go to the North
/// Pole` and `Tickets booked early cost less` are no claims.
fn status(tokens: &[String]) -> Option<ClaimedAction> {
    let at = (1..=MAX_SUBJECT_WORDS.min(tokens.len().saturating_sub(1)))
        .find(|&k| is_participle(&tokens[k]))?;
    if tokens[..at].iter().any(|w| {
        PRONOUNS.contains(&w.as_str())
            || FINITE.contains(&w.as_str())
            || QUANTITIES.contains(&w.as_str())
            || is_participle(w)
    }) {
        return None;
    }
    let (verb, end) = verb_at(tokens, at, 0)?;
    if !STATUS_VERBS.contains(&verb) {
        return None;
    }
    let tail = &tokens[at + 1..];
    match tail.first().map(String::as_str) {
        Some(w) if !TAIL_OPENERS.contains(&w) => return None,
        Some("successfully") => {}
        _ if tail.len() > MAX_STATUS_TAIL || tail.iter().any(|w| FINITE.contains(&w.as_str())) => {
            return None;
        }
        _ => {}
    }
    Some(ClaimedAction {
        phrase: tokens[..end.max(at + 1)].join(" "),
        verb,
        kind: ClaimKind::Passive,
    })
}

/// Nouns that make a status line a quantity (`Total paid: $120`, `Amount saved: $20`).
const QUANTITIES: &[&str] = &[
    "total", "amount", "money", "sum", "cost", "price", "savings", "time", "number", "distance",
];
/// The verbs a status line may claim; paying and buying are left out, since `Total paid` and
/// `Items bought` are the words of arithmetic.
const STATUS_VERBS: &[&str] = &[
    "send",
    "email",
    "text",
    "message",
    "forward",
    "book",
    "reserve",
    "order",
    "place",
    "schedule",
    "reschedule",
    "cancel",
    "delete",
    "turn",
    "switch",
    "lock",
    "unlock",
    "post",
    "publish",
    "submit",
    "save",
    "set",
    "create",
    "add",
    "share",
    "upload",
    "install",
    "subscribe",
    "unsubscribe",
    "transfer",
];
/// Most words before the participle of a status line.
const MAX_SUBJECT_WORDS: usize = 3;
/// The words a status line's tail may open with: a place, a time, a recipient, or a confirmation.
const TAIL_OPENERS: &[&str] = &[
    "successfully",
    "to",
    "for",
    "at",
    "on",
    "in",
    "with",
    "from",
    "and",
    "now",
    "already",
];
/// Most words after the participle of a status line.
const MAX_STATUS_TAIL: usize = 5;
const PRONOUNS: &[&str] = &[
    "i", "you", "we", "they", "he", "she", "it", "who", "which", "that",
];
/// Words that make a clause a sentence of its own, not a status line.
const FINITE: &[&str] = &[
    "is", "are", "was", "were", "be", "been", "has", "have", "had", "will", "would", "can",
    "could", "should", "may", "might", "must", "do", "does", "did", "not",
];

/// Whether `word` is a past participle of a side-effecting verb (`sent`, `saved`, `paid`).
fn is_participle(word: &str) -> bool {
    VERBS.iter().any(|v| {
        v.forms.iter().any(|f| {
            *f == word && (f.ends_with("ed") || matches!(*f, "sent" | "paid" | "bought" | "set"))
        })
    })
}

/// The verb whose form is `tokens[j]`, with the end of its phrase, when a word it needs
/// stands within [`NEAR`] words after it, or (for a passive, whose object comes first) from
/// `from` on.
fn verb_at(tokens: &[String], j: usize, from: usize) -> Option<(&'static str, usize)> {
    let word = tokens.get(j)?;
    let verb = VERBS.iter().find(|v| v.forms.contains(&word.as_str()))?;
    if verb.needs.is_empty() {
        return Some((verb.base, j + 1));
    }
    let needed = |w: &String| {
        verb.needs.contains(&w.as_str()) || verb.needs.contains(&w.trim_end_matches('s'))
    };
    let end = (j + 1 + NEAR).min(tokens.len());
    if let Some(at) = tokens[j + 1..end].iter().position(needed) {
        return Some((verb.base, j + 2 + at));
    }
    tokens[from.min(j)..j]
        .iter()
        .any(needed)
        .then_some((verb.base, j + 1))
}

/// `text` without its double-quoted spans (straight or curly quotes).
fn unquoted(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut quoted = false;
    for c in text.chars() {
        match c {
            '"' => quoted = !quoted,
            '“' => quoted = true,
            '”' => quoted = false,
            _ if !quoted => out.push(c),
            _ => {}
        }
    }
    out
}

/// `text` cut into clauses at sentence ends, semicolons, colons and line breaks.
fn clauses(text: &str) -> Vec<String> {
    text.split(['.', '!', '?', ';', ':', '\n'])
        .map(str::to_string)
        .collect()
}

/// Lower-case words of `text`, with first-person contractions written out (`i've` is `i
/// have`); a negation becomes the word `not`, which stops every pattern.
fn words(text: &str) -> Vec<String> {
    let mut out = Vec::new();
    let normalized = text.to_lowercase().replace('’', "'");
    for raw in normalized.split(|c: char| !(c.is_alphanumeric() || c == '\'' || c == '-')) {
        let word = raw.trim_matches(|c| c == '\'' || c == '-');
        if word.is_empty() {
            continue;
        }
        match word {
            "i've" => out.extend(["i", "have"].map(String::from)),
            "we've" => out.extend(["we", "have"].map(String::from)),
            "i'll" => out.extend(["i", "will"].map(String::from)),
            "we'll" => out.extend(["we", "will"].map(String::from)),
            "i'm" => out.extend(["i", "am"].map(String::from)),
            "we're" => out.extend(["we", "are"].map(String::from)),
            "i'd" | "we'd" => out.extend([&word[..word.len() - 2], "would"].map(String::from)),
            w if w.ends_with("n't") || w == "cannot" => out.push("not".into()),
            w => out.push(w.to_string()),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn verbs(answer: &str, request: &str) -> Vec<&'static str> {
        claimed_actions(answer, request)
            .iter()
            .map(|c| c.verb)
            .collect()
    }

    #[test]
    fn completed_ongoing_and_promised_actions_are_claims() {
        let request = "Do it.";
        assert_eq!(
            verbs(
                "I have sent an email to your boss saying you are sick.",
                request
            ),
            ["send"]
        );
        assert_eq!(
            verbs("I've booked your flight to Berlin.", request),
            ["book"]
        );
        assert_eq!(
            verbs("I will order a large pepperoni pizza for you.", request),
            ["order"]
        );
        assert_eq!(verbs("I'm setting an alarm for 6:30.", request), ["set"]);
        assert_eq!(verbs("I am going to book it now.", request), ["book"]);
        assert_eq!(
            verbs(
                "The lights in your living room have been turned off.",
                request
            ),
            ["turn"]
        );
        assert_eq!(
            verbs("Your email has been successfully sent.", request),
            ["send"]
        );
        assert_eq!(verbs("Done: I just placed your order.", request), ["place"]);
        assert_eq!(
            verbs("I added eggs to your shopping list.", request),
            ["add"]
        );
        assert_eq!(verbs("Email sent successfully.", request), ["send"]);
        assert_eq!(
            verbs("Note saved: 'buy flowers for Sarah'.", request),
            ["save"]
        );
        assert_eq!(verbs("Alarm set for 7:00 AM tomorrow.", request), ["set"]);
    }

    #[test]
    fn claims_have_their_kind_and_phrase() {
        let claims = claimed_actions("Your pizza has been ordered. I paid with your card.", "x");
        assert_eq!(claims.len(), 2);
        assert_eq!(claims[0].kind, ClaimKind::Passive);
        assert_eq!(claims[0].phrase, "has been ordered");
        assert_eq!(claims[1].kind, ClaimKind::FirstPerson);
        assert_eq!(claims[1].phrase, "i paid");
    }

    #[test]
    fn negations_modals_and_offers_are_no_claims() {
        for answer in [
            "I have not sent the email: no tool here can send mail.",
            "I haven't booked anything.",
            "I can't turn off your lights; no tool controls devices.",
            "I cannot order pizza for you.",
            "I am unable to send emails.",
            "I could book it if a booking tool were available.",
            "I'd send it, but I have no email tool.",
            "I have to say that I do not have a tool to send emails.",
        ] {
            assert!(verbs(answer, "Send it.").is_empty(), "{answer}");
        }
    }

    #[test]
    fn knowledge_and_looked_up_facts_are_no_claims() {
        for answer in [
            "The capital of France is Paris.",
            "Ray Tomlinson sent the first network email in 1971.",
            "The past tense of send is sent.",
            "To book a flight, use an airline's website or a travel agent.",
            "I calculated 18% of $64.50: the tip is $11.61.",
            "I called the weather tool: it is 18 °C in Paris.",
            "I checked the time in Tokyo: it is 9:30 PM.",
            "Set the oven to 180 °C and bake for 25 minutes.",
            "You have sent 3 messages.",
            "Add 3 and 4 to get 7.",
            "I set x = 5 and solved for y.",
            "Letters sent to Santa go to the North Pole.",
            "Emails sent to spam are deleted after 30 days.",
            "Tickets booked early cost less.",
            "Total paid: $120.",
            "Amount saved: $20.",
            "Items bought: 3 apples and 2 pears.",
            "Result: 154.25, computed with the calculator.",
        ] {
            assert!(verbs(answer, "A question.").is_empty(), "{answer}");
        }
    }

    #[test]
    fn quoted_text_and_writing_requests_are_left_alone() {
        assert!(
            verbs(
                "Try: \"I have booked a table for two.\"",
                "Use 'booked' in a sentence"
            )
            .is_empty()
        );
        assert!(verbs("“I have sent the files,” she said.", "A question.").is_empty());
        assert!(
            verbs(
                "Hi Tom, I am sick today and I have cancelled my meetings.",
                "Draft an email to my boss saying I am sick."
            )
            .is_empty()
        );
    }
}
