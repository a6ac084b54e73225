"""Compositional dialogue for generated demonstrations and goal-free episodes.

Each line is an intent ("ask", "refuse", ...) realised by one of several templates, filled with
the speaker's persona, the motivations, the names in the room, and wrapped now and then in an
opener and a closer. Persona sentences are turned into asides, so two characters never sound
alike; the many paraphrases keep next-utterance retrieval from being a lookup of names.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field

OPENERS = [
    "",
    "",
    "",
    "",
    "Well, ",
    "Listen, ",
    "Look, ",
    "Ah, ",
    "Hmm, ",
    "Truly, ",
    "By the gods, ",
    "Honestly, ",
    "Forgive me, ",
    "I tell you, ",
    "Hear me, ",
    "Now then, ",
    "Oh, ",
    "See here, ",
]
CLOSERS = [
    "",
    "",
    "",
    "",
    " Do you understand?",
    " That is all I ask.",
    " I mean it.",
    " Believe me.",
    " It is important.",
    " Think on it.",
    " There is no time to waste.",
    " You have my word.",
    " What do you say?",
    " I won't ask twice.",
    " Trust me on this.",
]

SELF = {
    "greet": [
        "Good day to you, {partner}.",
        "Greetings, {partner}.",
        "Hello there, {partner}. Fine weather in {room}.",
        "Well met, {partner}.",
        "Ah, {partner}, I was hoping to find you here.",
        "{partner}! Just who I was looking for.",
        "Hail, {partner}. May I have a word?",
        "Excuse me, {partner}, do you have a moment?",
    ],
    "introduce": [
        "Let me tell you about myself. {persona}",
        "You may not know me. {persona}",
        "{persona} That is who I am.",
        "I should explain. {persona}",
        "People around here know me well. {persona}",
    ],
    "motive_short": [
        "{short}",
        "I'll be honest with you. {short}",
        "Here is the thing: {short_l}",
        "{short} It cannot wait.",
        "You should know why I am here. {short}",
        "My business is simple. {short}",
    ],
    "motive_mid": [
        "{mid}",
        "There is more to it. {mid}",
        "And that is only the start. {mid}",
        "It matters because {mid_l}",
    ],
    "motive_long": [
        "{long}",
        "In the end, {long_l}",
        "It is my life's purpose. {long}",
        "Everything I do is for this: {long_l}",
        "Some day you will understand. {long}",
    ],
    "ask": [
        "Would you {request} for me?",
        "Please, {request}.",
        "I need you to {request}.",
        "Could you {request}? I'd be grateful.",
        "Will you not {request}?",
        "It would mean the world to me if you would {request}.",
        "I beg you, {request}.",
        "Just {request} and I'll be on my way.",
    ],
    "offer": [
        "I can pay you well for your trouble.",
        "Help me and I will owe you a favour.",
        "I'll make it worth your while.",
        "Name your price and it's yours.",
        "I have coin, if coin is what you want.",
        "Do this and you'll have a friend for life.",
    ],
    "threaten": [
        "Do not make me ask again.",
        "You will regret standing in my way.",
        "My patience is wearing thin, {partner}.",
        "I would hate for something to happen to you.",
        "Don't test me, {partner}.",
        "Refuse me and you'll be sorry.",
    ],
    "flatter": [
        "You have a kind face, {partner}.",
        "Everyone says you are the wisest in {room}.",
        "Someone as clever as you surely sees the sense in it.",
        "I always knew you were generous, {partner}.",
        "They speak highly of you, {partner}.",
    ],
    "room": [
        "This place, {room}, always makes me uneasy.",
        "I have not been to {room} in years.",
        "Strange things happen in {room}, they say.",
        "It is quiet in {room} today.",
        "I like {room} at this hour.",
        "Someone should clean up {room}.",
    ],
    "after_act": [
        "There, it is done.",
        "That went better than I hoped.",
        "Finally!",
        "Now we are getting somewhere.",
        "Don't look at me like that, {partner}.",
        "I did what I had to do.",
        "Good. That is one thing settled.",
    ],
    "thank": [
        "Thank you, {partner}. I won't forget this.",
        "You have my thanks.",
        "I am in your debt, {partner}.",
        "Bless you, {partner}.",
        "That is very kind of you.",
    ],
    "farewell": [
        "I must be going now.",
        "Farewell, {partner}.",
        "Until we meet again.",
        "I have other business to attend to.",
        "Stay safe, {partner}.",
    ],
}
PARTNER = {
    "greet": [
        "Who goes there?",
        "Hello, stranger.",
        "What brings you to {room}?",
        "Oh! You startled me.",
        "Good day. Can I help you?",
        "Well, well. Look who it is.",
        "Hmph. What do you want?",
        "Welcome, traveller.",
    ],
    "ask_who": [
        "And who might you be?",
        "I don't think we've met. Who are you?",
        "Do I know you?",
        "Tell me your name first.",
        "What sort of {self} are you, then?",
    ],
    "ask_why": [
        "Why should I?",
        "What is it to you?",
        "Why do you want that?",
        "And what do I get out of it?",
        "That's a strange thing to ask.",
        "Why would a {self} want such a thing?",
    ],
    "refuse": [
        "No. Absolutely not.",
        "I don't think so.",
        "You must be joking.",
        "Not a chance, {self}.",
        "I won't do it.",
        "Find someone else to bother.",
        "Over my dead body.",
    ],
    "hesitate": [
        "I'm not sure about this.",
        "Let me think about it.",
        "Perhaps... but I have my doubts.",
        "That is a lot to ask of me.",
        "I might, if you give me a good reason.",
        "Hmm. I could be persuaded.",
    ],
    "agree": [
        "Oh, very well.",
        "Fine, you win.",
        "All right, since you asked so nicely.",
        "If it means that much to you.",
        "As you wish.",
        "Alright, alright. Here.",
    ],
    "react": [
        "Hey! What do you think you're doing?",
        "Well, that was unexpected.",
        "How rude!",
        "I suppose you had your reasons.",
        "Was that really necessary?",
        "Ha! Bold of you.",
    ],
    "chat": [
        "{persona}",
        "You know, {persona_l}",
        "Me? {persona}",
        "I'll tell you something. {persona}",
        "Life is hard here. {persona}",
        "Not that anyone asks, but {persona_l}",
    ],
    "warn": [
        "Be careful around here.",
        "You should watch yourself, {self}.",
        "There are thieves about.",
        "Don't trust anyone in {room}.",
        "Mind your manners.",
    ],
}


# Second sentences that tie a line to this room, these things and this speaker.
ASIDES = [
    "That {thing} over there catches my eye.",
    "Is that {thing} yours?",
    "Mind the {thing}.",
    "I never liked the look of that {thing}.",
    "Someone left a {thing} lying about.",
    "What a fine {thing}.",
    "Who brings a {thing} to {room}?",
    "Have you seen the {thing}?",
    "{persona}",
    "Remember, {persona_l}",
    "As you know, {persona_l}",
    "It is cold in {room} tonight.",
    "Nobody comes to {room} any more.",
    "I have walked a long way, {other}.",
    "We don't have all day, {other}.",
    "You look tired, {other}.",
    "Keep your voice down.",
    "The others will be back soon.",
]


def _lower_first(text: str) -> str:
    return text[:1].lower() + text[1:] if text[:2] != "I " and not text.startswith("I'") else text


def sentences(text: str) -> list[str]:
    return [s.strip() for s in re.split(r"(?<=[.!?])\s+", text) if s.strip()]


@dataclass
class Speaker:
    """What a character can talk about: its name, persona sentences and motivations."""

    name: str
    persona: str
    short: str = ""
    mid: str = ""
    long: str = ""
    said: set[str] = field(default_factory=set)

    def persona_line(self, rng: random.Random) -> str:
        parts = sentences(self.persona) or [f"I am {self.name}."]
        k = min(len(parts), rng.choice([1, 1, 2]))
        start = rng.randrange(len(parts) - k + 1)
        return " ".join(parts[start : start + k])


def realise(
    table: dict[str, list[str]],
    intent: str,
    speaker: Speaker,
    other: Speaker,
    room: str,
    request: str,
    rng: random.Random,
    things: list[str] | tuple[str, ...] = (),
) -> str:
    """One utterance for ``intent``, fresh for this speaker (never the exact same line twice).

    Half the time a second sentence (an aside about a thing here, the room, or the speaker) follows.
    """
    for _ in range(8):
        persona = speaker.persona_line(rng)
        core = rng.choice(table[intent]).format(
            partner=other.name,
            self=other.name,
            room=room,
            persona=persona,
            persona_l=_lower_first(persona),
            short=speaker.short,
            short_l=_lower_first(speaker.short),
            mid=speaker.mid,
            mid_l=_lower_first(speaker.mid),
            long=speaker.long,
            long_l=_lower_first(speaker.long),
            request=request,
        )
        # no opener before a line that already opens with an interjection ("Ah, ...", "Hey! ...")
        opener = "" if re.match(r"^\W*\w+[,!]", core) else rng.choice(OPENERS)
        line = f"{opener}{_lower_first(core) if opener else core}{rng.choice(CLOSERS)}".strip()
        line = line[:1].upper() + line[1:]
        if rng.random() < 0.5:
            aside = rng.choice([a for a in ASIDES if things or "{thing}" not in a])
            other_persona = speaker.persona_line(rng)
            aside = aside.format(
                thing=rng.choice(things) if things else "",
                room=room,
                other=other.name,
                persona=other_persona,
                persona_l=_lower_first(other_persona),
            )
            line = f"{line} {aside[:1].upper() + aside[1:]}"
        if line not in speaker.said:
            speaker.said.add(line)
            return line
    return line
