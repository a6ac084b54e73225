"""The small LIGHT environment DB that lq ships: rooms, characters and objects written by us.

It has the shape of the real LIGHT DB (``rooms.json``, ``characters.json``, ``objects.json``) and
is composed here, deterministically, from hand-written parts: room categories with their own
names and details, character roles with persona lines and traits, object nouns with adjectives.
The JSON files live beside this module as package data; ``python -m lq.data.default_db`` rewrites
them, and a test checks that they equal what this module composes.
"""

from __future__ import annotations

import random
from pathlib import Path

from lq.data.light_db import Character, LightDB, LightObject, Room, load_light_db, write_light_db

DEFAULT_DB_DIR = Path(__file__).with_name("default_db")

# category: (room names, details)
ROOMS: dict[str, tuple[list[str], list[str]]] = {
    "Castle": (
        ["The great hall", "The throne room", "The castle kitchens"],
        [
            "Banners of the royal house hang from the high stone walls.",
            "Torches flicker in iron sconces.",
            "Servants hurry across the flagstones with trays and linens.",
            "A long oak table runs down the middle.",
        ],
    ),
    "Forest": (
        ["A mossy clearing", "The old oak grove", "A dark thicket"],
        [
            "Sunlight falls in pale shafts through the canopy.",
            "The ground is soft with fallen needles.",
            "Birds call to one another from the branches.",
            "A narrow deer trail winds between the trunks.",
        ],
    ),
    "Tavern": (
        ["The Prancing Goat tavern", "The cellar bar", "The tavern common room"],
        [
            "The air smells of ale, smoke and roasting meat.",
            "A fire crackles in a wide stone hearth.",
            "Travellers crowd the benches, trading rumours.",
            "Tankards hang from hooks above the counter.",
        ],
    ),
    "Village": (
        ["The village green", "The well square", "A cottage row"],
        [
            "Chickens scratch in the dirt between thatched cottages.",
            "Children chase a hoop across the grass.",
            "An old well stands in the middle, its rope frayed.",
            "Smoke rises from every chimney.",
        ],
    ),
    "Farm": (
        ["The barnyard", "The wheat field", "The farmhouse kitchen"],
        [
            "Hay bales are stacked against the barn wall.",
            "A plough lies abandoned at the edge of the field.",
            "Geese honk at anyone who comes near.",
            "The smell of fresh bread drifts out of the house.",
        ],
    ),
    "Cave": (
        ["A dripping cave", "The crystal grotto", "The dragon's lair"],
        [
            "Water drips steadily from the ceiling.",
            "The walls glitter with veins of quartz.",
            "Bones are scattered across the floor.",
            "A cold draught blows from somewhere deeper in.",
        ],
    ),
    "Church": (
        ["The chapel", "The cathedral nave", "The rectory"],
        [
            "Candles burn before a carved altar.",
            "Light pours through stained glass windows.",
            "Wooden pews stand in neat rows.",
            "The smell of incense hangs in the air.",
        ],
    ),
    "Market": (
        ["The bazaar", "The fish market", "The spice stalls"],
        [
            "Merchants shout their prices over one another.",
            "Awnings of every colour shade the stalls.",
            "Carts piled with goods block the narrow lanes.",
            "Coins clink as they change hands.",
        ],
    ),
    "Dungeon": (
        ["The dungeon cells", "The torture chamber", "The guard post"],
        [
            "Iron bars line the damp corridor.",
            "Chains hang from rings set in the walls.",
            "A single lantern gives off a sickly light.",
            "Somewhere a prisoner moans.",
        ],
    ),
    "Mountain": (
        ["The mountain pass", "The snowy summit", "A rocky ledge"],
        [
            "Wind howls between the jagged peaks.",
            "Snow lies deep in the hollows.",
            "Far below, a river glints like a silver thread.",
            "Loose stones skitter away underfoot.",
        ],
    ),
    "Port": (
        ["The harbour docks", "The shipwright's yard", "The lighthouse"],
        [
            "Gulls wheel over the masts of moored ships.",
            "Sailors haul crates up the gangplanks.",
            "The smell of salt and tar is everywhere.",
            "Waves slap against the wooden pilings.",
        ],
    ),
    "Swamp": (
        ["The fetid marsh", "The witch's hut", "A sunken causeway"],
        [
            "Mist clings to the black water.",
            "Frogs croak among the reeds.",
            "Twisted trees trail grey moss into the mire.",
            "Something large moves beneath the surface.",
        ],
    ),
    "Graveyard": (
        ["The old cemetery", "The crypt", "The mausoleum"],
        [
            "Crooked headstones lean in the long grass.",
            "A raven watches from a stone angel.",
            "The earth of one grave looks freshly turned.",
            "Fog rolls between the tombs.",
        ],
    ),
    "Library": (
        ["The great library", "The scriptorium", "The wizard's study"],
        [
            "Shelves of books climb to the vaulted ceiling.",
            "Dust motes drift in the lamplight.",
            "Scrolls lie unrolled across a reading desk.",
            "The silence is thick and heavy.",
        ],
    ),
    "Smithy": (
        ["The blacksmith's forge", "The armoury", "The foundry"],
        [
            "The forge roars and sparks fly from the anvil.",
            "Finished blades hang along the wall.",
            "The heat makes the air shimmer.",
            "Buckets of water stand ready for quenching.",
        ],
    ),
    "Palace": (
        ["The royal gardens", "The queen's chambers", "The ballroom"],
        [
            "Marble statues line the paths.",
            "Silk curtains stir in the breeze.",
            "Courtiers whisper behind painted fans.",
            "Fountains splash in stone basins.",
        ],
    ),
    "Desert": (
        ["The dunes", "A desert oasis", "The ruined temple"],
        [
            "The sun beats down on endless sand.",
            "Palm trees shade a small pool of water.",
            "Broken columns rise from the sand.",
            "A lizard darts under a rock.",
        ],
    ),
    "Lake": (
        ["The lake shore", "The fishing pier", "A reedy island"],
        [
            "The water is calm and clear.",
            "Fishing boats bob near the shore.",
            "Herons stalk the shallows.",
            "Mist lifts slowly from the surface.",
        ],
    ),
    "Road": (
        ["The king's road", "A crossroads", "The toll bridge"],
        [
            "Cart ruts are worn deep into the road.",
            "A weathered signpost points three ways.",
            "Travellers trudge past with heavy packs.",
            "A milestone stands half hidden in weeds.",
        ],
    ),
    "Camp": (
        ["The bandit camp", "The army encampment", "A hunters' camp"],
        [
            "Tents are pitched around a smouldering fire.",
            "Weapons lean against a rack.",
            "Sentries pace the edge of the camp.",
            "A pot of stew bubbles over the coals.",
        ],
    ),
    "Tower": (
        ["The wizard's tower", "The watchtower", "The bell tower"],
        [
            "A spiral staircase winds upward.",
            "Arrow slits look out over the land.",
            "Strange instruments whirr on a table.",
            "The wind whistles through the stones.",
        ],
    ),
}

# role: (char_type, persona lines)
ROLES: dict[str, tuple[str, list[str]]] = {
    "knight": ("person", ["I am a knight sworn to the king.", "I fight on horseback in times of war."]),
    "dragon": ("creature", ["I am a dragon living in the mountains.", "I hoard treasure and guard it jealously."]),
    "king": ("person", ["I am the king of this land.", "I must protect my kingdom from its enemies."]),
    "queen": ("person", ["I am the queen.", "I rule wisely beside the king and advise him in all matters."]),
    "blacksmith": ("person", ["I am the village blacksmith.", "I forge swords, horseshoes and ploughs."]),
    "merchant": ("person", ["I am a travelling merchant.", "I buy cheap and sell dear."]),
    "priest": ("person", ["I am a priest of the old church.", "I tend to the souls of the faithful."]),
    "thief": ("person", ["I am a thief.", "I take what I need from those who have too much."]),
    "farmer": ("person", ["I am a farmer.", "I work the fields from dawn to dusk."]),
    "witch": ("person", ["I am a witch of the marsh.", "I brew potions from herbs and stranger things."]),
    "wizard": ("person", ["I am a wizard.", "I study the secrets of magic in my tower."]),
    "guard": ("person", ["I am a guard.", "I keep watch and keep the peace."]),
    "innkeeper": ("person", ["I am the innkeeper.", "I keep the ale flowing and the rooms clean."]),
    "bard": ("person", ["I am a wandering bard.", "I sing of heroes and collect stories wherever I go."]),
    "hunter": ("person", ["I am a hunter.", "I track deer and boar through the forest."]),
    "fisherman": ("person", ["I am a fisherman.", "I cast my nets on the lake every morning."]),
    "sailor": ("person", ["I am a sailor.", "I have sailed to every port on the coast."]),
    "squire": ("person", ["I am a squire.", "I serve my knight and dream of being knighted myself."]),
    "princess": ("person", ["I am a princess.", "I long for adventure beyond the palace walls."]),
    "prince": ("person", ["I am a prince.", "I must prove myself worthy of the crown."]),
    "monk": ("person", ["I am a monk.", "I copy manuscripts and keep my vows of silence."]),
    "healer": ("person", ["I am a healer.", "I mend wounds and cure fevers with herbs."]),
    "baker": ("person", ["I am a baker.", "I rise before dawn to bake bread for the village."]),
    "shepherd": ("person", ["I am a shepherd.", "I watch over my flock in the hills."]),
    "miner": ("person", ["I am a miner.", "I dig for silver deep beneath the mountain."]),
    "bandit": ("person", ["I am a bandit.", "I rob travellers on the king's road."]),
    "soldier": ("person", ["I am a soldier.", "I follow orders and fight for my captain."]),
    "captain": ("person", ["I am a ship's captain.", "My ship and crew are my whole life."]),
    "jester": ("person", ["I am the court jester.", "I make the king laugh and hear every secret."]),
    "scholar": ("person", ["I am a scholar.", "I seek knowledge in old books and ruins."]),
    "gravedigger": ("person", ["I am the gravedigger.", "I bury the dead and keep the cemetery."]),
    "alchemist": ("person", ["I am an alchemist.", "I try to turn lead into gold."]),
    "ranger": ("person", ["I am a ranger.", "I guard the borders of the wild lands."]),
    "troll": ("creature", ["I am a troll who lives under the bridge.", "I demand a toll from all who cross."]),
    "goblin": ("creature", ["I am a goblin.", "I love shiny things and hate sunlight."]),
    "wolf": ("creature", ["I am a grey wolf.", "I hunt with my pack through the winter forest."]),
    "cat": ("creature", ["I am a castle cat.", "I catch mice and sleep by the fire."]),
    "dwarf": ("person", ["I am a dwarf.", "I craft fine things from metal and stone."]),
    "elf": ("person", ["I am an elf of the forest.", "I have lived for centuries among the trees."]),
    "ghost": ("creature", ["I am a ghost.", "I wander the place where I died, seeking peace."]),
    "servant": ("person", ["I am a servant of the household.", "I fetch and carry and am rarely thanked."]),
    "cook": ("person", ["I am the cook.", "I feed everyone in the castle."]),
    "stablehand": ("person", ["I am a stablehand.", "I groom the horses and muck out the stalls."]),
    "herbalist": ("person", ["I am an herbalist.", "I gather plants in the forest and swamp."]),
    "noble": ("person", ["I am a noble of an old family.", "I care for my lands and my good name."]),
    "beggar": ("person", ["I am a beggar.", "I ask for coins at the market gate."]),
    "pirate": ("person", ["I am a pirate.", "I plunder ships on the open sea."]),
    "mercenary": ("person", ["I am a mercenary.", "I fight for whoever pays the most."]),
    "nun": ("person", ["I am a nun.", "I care for the sick and the poor."]),
    "ogre": ("creature", ["I am an ogre.", "I am always hungry and easily angered."]),
}
TRAITS = [
    "I am loyal to my friends.",
    "I trust no one.",
    "I am greedy for gold.",
    "I am kind to strangers.",
    "I have a quick temper.",
    "I am curious about everything.",
    "I am brave, sometimes foolishly so.",
    "I am lazy and love to sleep.",
    "I am proud of my family.",
    "I keep a dark secret.",
    "I am superstitious.",
    "I am generous with what little I have.",
    "I love to gossip.",
    "I am ambitious.",
    "I am shy with strangers.",
    "I am always hungry.",
]
CHARACTER_EPITHETS = ["", "old", "young"]

# noun: (kind, descriptions)
OBJECTS: dict[str, list[str]] = {
    "sword": ["The blade is sharp and well balanced."],
    "dagger": ["A short blade made for close work."],
    "axe": ["A heavy head on a stout handle."],
    "spear": ["A long shaft tipped with iron."],
    "bow": ["The bow is strung and ready."],
    "mace": ["A flanged iron head on a short haft."],
    "staff": ["A tall staff carved with runes."],
    "shield": ["The shield bears a faded crest."],
    "hammer": ["A smith's hammer, worn smooth."],
    "club": ["A knotted club of hard wood."],
    "torch": ["A torch wrapped in pitch-soaked rags."],
    "pitchfork": ["Three iron tines on a long pole."],
    "scythe": ["Its curved blade gleams."],
    "knife": ["A small knife with a bone handle."],
    "lance": ["A long lance for jousting."],
    "cloak": ["A heavy cloak that keeps out the rain."],
    "hat": ["A hat with a wide brim."],
    "crown": ["It glitters with gems."],
    "ring": ["A ring with a small stone."],
    "necklace": ["A fine chain with a pendant."],
    "robe": ["A long robe with deep sleeves."],
    "armor": ["Plates of steel joined by leather straps."],
    "helmet": ["A steel helmet with a visor."],
    "boots": ["Sturdy boots for long roads."],
    "gloves": ["Leather gloves, soft with use."],
    "tunic": ["A simple tunic of woven wool."],
    "dress": ["A dress of fine cloth."],
    "apron": ["An apron stained from work."],
    "scarf": ["A warm scarf."],
    "amulet": ["An amulet on a cord."],
    "belt": ["A belt with a brass buckle."],
    "apple": ["It is crisp and sweet."],
    "bread": ["A loaf of fresh bread."],
    "cheese": ["A wedge of strong cheese."],
    "meat": ["A cut of roast meat."],
    "fish": ["A fish caught this morning."],
    "pie": ["A pie with a golden crust."],
    "cake": ["A honey cake."],
    "egg": ["An egg with a speckled shell."],
    "carrot": ["A long orange carrot."],
    "mushroom": ["A plump mushroom."],
    "stew": ["A bowl of thick stew."],
    "honey": ["A pot of golden honey."],
    "wine": ["Dark red wine."],
    "ale": ["Foaming ale."],
    "mead": ["Sweet mead."],
    "water": ["Clear, cold water."],
    "milk": ["Fresh milk."],
    "potion": ["A potion that glows faintly."],
    "tea": ["A hot herbal tea."],
    "bag": ["A sack of rough cloth."],
    "chest": ["A chest bound with iron bands."],
    "basket": ["A woven basket."],
    "barrel": ["A wooden barrel."],
    "bucket": ["A wooden bucket with a rope handle."],
    "box": ["A small wooden box."],
    "jar": ["A clay jar."],
    "pouch": ["A leather pouch."],
    "bottle": ["A glass bottle."],
    "cup": ["A simple cup."],
    "mug": ["A pewter mug."],
    "crate": ["A crate of rough planks."],
    "satchel": ["A leather satchel."],
    "key": ["An iron key."],
    "book": ["A book of old tales."],
    "scroll": ["A scroll sealed with wax."],
    "map": ["A map of the kingdom."],
    "coin": ["A gold coin."],
    "gem": ["A cut gem that sparkles."],
    "rope": ["A coil of strong rope."],
    "candle": ["A tallow candle."],
    "lantern": ["A brass lantern."],
    "feather": ["A long feather."],
    "bone": ["An old bone."],
    "flower": ["A wild flower."],
    "letter": ["A folded letter."],
    "dragon egg": ["A golden egg, warm to the touch."],
    "horn": ["A hunting horn."],
    "bell": ["A small bell."],
    "statue": ["A stone statue of a hero."],
    "throne": ["A carved throne."],
    "altar": ["A stone altar."],
    "anvil": ["A heavy iron anvil."],
    "table": ["A long table."],
    "fountain": ["A stone fountain."],
    "tree": ["A tall old tree."],
    "bed": ["A bed with a straw mattress."],
    "shelf": ["A shelf on the wall."],
    "cauldron": ["A black iron cauldron."],
    "cape": ["A cape that flows behind you."],
    "shoes": ["A pair of leather shoes."],
    "crossbow": ["A crossbow with a steel string."],
    "whip": ["A braided leather whip."],
    "sack": ["A sack of coarse hemp."],
    "bowl": ["A wooden bowl."],
    "sausage": ["A fat sausage."],
    "pear": ["A ripe pear."],
    "flask": ["A flask that sloshes."],
    "lute": ["A lute with six strings."],
    "dice": ["A pair of bone dice."],
    "drum": ["A small drum."],
}
ADJECTIVES = [
    "old",
    "fine",
    "rusty",
    "golden",
    "plain",
    "heavy",
    "small",
    "silver",
    "worn",
    "ornate",
    "dusty",
    "sturdy",
]


def compose_default_db(seed: int = 0) -> LightDB:
    rng = random.Random(seed)
    rooms = []
    for category, (names, details) in ROOMS.items():
        for i, name in enumerate(names):
            picked = details[i:] + details[:i]
            rooms.append(Room(id=len(rooms), name=name, category=category, description=" ".join(picked[:3])))
    characters = []
    for role, (char_type, lines) in ROLES.items():
        for epithet in CHARACTER_EPITHETS:
            name = f"{epithet} {role}".strip()
            trait = TRAITS[(len(characters) * 7) % len(TRAITS)]
            characters.append(
                Character(
                    id=len(characters),
                    name=name,
                    char_type=char_type,
                    persona=[" ".join([*lines, trait])],
                    description=f"{'An' if name[0] in 'aeiou' else 'A'} {name}.",
                )
            )
    objects = []
    for noun, descriptions in OBJECTS.items():
        for adjective in rng.sample(ADJECTIVES, 3):
            objects.append(
                LightObject(
                    id=len(objects),
                    name=f"{adjective} {noun}",
                    base_form=[noun],
                    descriptions=[f"This {noun} looks {adjective}. {descriptions[0]}"],
                )
            )
    return LightDB(rooms, characters, objects)


def load_default_db() -> LightDB:
    return load_light_db(DEFAULT_DB_DIR)


if __name__ == "__main__":
    write_light_db(compose_default_db(), DEFAULT_DB_DIR)
    print(f"wrote {load_default_db()} to {DEFAULT_DB_DIR}")
