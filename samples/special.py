"""Texts for the planted cases: what the quality, toxicity and PII stages must catch.

Written for refinery's samples. Each constant is one page's main content (a list of paragraphs or
lines); make_samples.py wraps it in HTML or writes it to WET/JSONL.
"""
from __future__ import annotations

# -- spam / keyword stuffing (Gopher repetition rules, FineWeb duplicate lines) ----------------
SPAM_WATCHES = [
    "Buy cheap replica watches online best price. Cheap watches, cheap replica watches, best replica watches.",
    "Buy cheap watches best price buy cheap watches best price buy cheap watches best price.",
    "Replica watches cheap replica watches discount replica watches cheap watches for sale best price guaranteed.",
    "Buy cheap replica watches online best price. Cheap watches, cheap replica watches, best replica watches.",
    "Cheap watches cheap watches cheap watches free shipping free shipping free shipping.",
    "Best price replica watches, best price cheap watches, best price discount watches, order now.",
    "Buy cheap watches best price buy cheap watches best price buy cheap watches best price.",
    "Cheap replica watches best quality best price cheap replica watches best quality best price.",
    "Click here for cheap watches. Click here for replica watches. Click here for best price watches.",
    "Buy cheap replica watches online best price. Cheap watches, cheap replica watches, best replica watches.",
]

SPAM_FLIGHTS = [
    "cheap flights cheap hotels cheap car rental cheap holidays cheap flights cheap hotels",
    "best price flights best price hotels best price car rental best price holidays",
    "cheap flights to london cheap flights to paris cheap flights to rome cheap flights to madrid",
    "cheap flights to berlin cheap flights to vienna cheap flights to prague cheap flights to lisbon",
    "last minute flights last minute hotels last minute deals last minute cheap flights",
    "cheap flights cheap hotels cheap car rental cheap holidays cheap flights cheap hotels",
    "book now best price guaranteed book now best price guaranteed book now best price guaranteed",
    "cheap flights cheap hotels cheap car rental cheap holidays cheap flights cheap hotels",
    "discount flights discount hotels discount car rental discount holidays discount cruises",
    "cheap flights to new york cheap flights to miami cheap flights to chicago cheap flights",
]

SPAM_LOANS_DE = [
    "Kredit ohne Schufa sofort Kredit ohne Schufa günstig Kredit ohne Schufa online beantragen.",
    "Sofortkredit günstig Sofortkredit online Sofortkredit ohne Schufa Sofortkredit bester Zins.",
    "Kredit ohne Schufa sofort Kredit ohne Schufa günstig Kredit ohne Schufa online beantragen.",
    "Jetzt Kredit beantragen, jetzt Kredit sichern, jetzt Kredit ohne Schufa, jetzt Geld sofort.",
    "Günstiger Kredit, billiger Kredit, schneller Kredit, bester Kredit, Kredit sofort aufs Konto.",
    "Kredit ohne Schufa sofort Kredit ohne Schufa günstig Kredit ohne Schufa online beantragen.",
    "Geld sofort, Geld leihen, Geld online, Geld ohne Schufa, Geld heute noch auf dem Konto.",
    "Sofortkredit günstig Sofortkredit online Sofortkredit ohne Schufa Sofortkredit bester Zins.",
]

SPAM_CASINO = [
    "Online casino bonus free spins no deposit casino bonus free spins no deposit casino bonus.",
    "Best online casino best casino bonus best free spins best slots best jackpot best casino.",
    "Play slots online win real money play slots online win real money play slots online now.",
    "Online casino bonus free spins no deposit casino bonus free spins no deposit casino bonus.",
    "Casino casino casino slots slots slots poker poker poker roulette roulette roulette jackpot.",
    "Sign up today and get 500 free spins, sign up today and get 500 free spins, sign up today.",
    "Online casino bonus free spins no deposit casino bonus free spins no deposit casino bonus.",
    "Best online casino best casino bonus best free spins best slots best jackpot best casino.",
]

# -- very short pages ----------------------------------------------------------------------------
SHORT = [
    ("en", "Coming soon", ["Coming soon."]),
    ("en", "Thank you", ["Thanks for subscribing!"]),
    ("de", "Wartung", ["Wir sind gleich wieder da."]),
    ("fr", "En construction", ["Site en construction."]),
    ("es", "Acceso", ["Inicie sesión para continuar."]),
    ("en", "Login", ["Log in", "Username", "Password"]),
]

# -- C4 line/page rules ----------------------------------------------------------------------------
LOREM = [
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt ut labore et dolore magna aliqua.",
    "Ut enim ad minim veniam, quis nostrud exercitation ullamco laboris nisi ut aliquip ex ea commodo consequat.",
    "Duis aute irure dolor in reprehenderit in voluptate velit esse cillum dolore eu fugiat nulla pariatur.",
    "Excepteur sint occaecat cupidatat non proident, sunt in culpa qui officia deserunt mollit anim id est laborum.",
    "Sed ut perspiciatis unde omnis iste natus error sit voluptatem accusantium doloremque laudantium, totam rem aperiam.",
    "Nemo enim ipsam voluptatem quia voluptas sit aspernatur aut odit aut fugit, sed quia consequuntur magni dolores.",
]

LOREM_WITH_ENGLISH = [
    "Welcome to our new website! We are a small family business offering garden design and maintenance.",
    "Lorem ipsum dolor sit amet, consectetur adipiscing elit. Integer nec odio praesent libero sed cursus ante.",
    "Our services: Lorem ipsum dolor sit amet, consectetur adipiscing elit, sed do eiusmod tempor incididunt.",
    "About the team: Duis sagittis ipsum, praesent mauris, fusce nec tellus sed augue semper porta.",
    "Contact us today for a free quote. We look forward to hearing from you.",
]

JAVASCRIPT_WARNING = [
    "Please enable JavaScript in your browser to view this page.",
    "This site requires JavaScript to work properly",
    "You are using an outdated browser",
    "Upgrade your browser to improve your experience",
    "Loading",
    "Javascript is disabled in your web browser. Some features will not work.",
    "Our online shop needs javascript for the shopping cart and the checkout.",
]

NO_PUNCTUATION_LINES = [
    "Opening hours",
    "Monday to Friday 9 to 18",
    "Saturday 10 to 14",
    "Sunday closed",
    "Our products",
    "Garden tools",
    "Seeds and bulbs",
    "Potting soil and compost",
    "Plant pots in all sizes",
    "Watering cans and hoses",
    "Outdoor furniture",
    "Gift vouchers",
    "Find us",
    "Station Road 14 next to the fire station",
    "Free parking behind the shop",
]

CURLY_BRACES = [
    "Here is the small stylesheet we use for the club's newsletter, in case anyone wants to reuse it.",
    "body { font-family: Georgia, serif; max-width: 40em; margin: 0 auto; }",
    "h1 { font-size: 1.6em; color: #2a4d14; }",
    "a { color: #1a5276; text-decoration: none; }",
    "Paste it into the head of your page and adjust the colours to taste.",
    "If something does not look right, send a message to the newsletter team and we will have a look.",
]

# -- Gopher rules ---------------------------------------------------------------------------------
BULLETS = [
    "• Fresh eggs from free range hens",
    "• Seasonal vegetables picked every morning",
    "• Homemade jam and chutney",
    "• Raw honey from our own hives",
    "• Apple juice pressed in October",
    "• Goat cheese and yoghurt",
    "• Flowers for the table",
    "• Firewood by the sack",
    "• Christmas trees in December",
    "• Eggs, bread and milk on Saturdays",
    "• Potatoes by the kilo",
    "• Pumpkins in the autumn",
]

ELLIPSIS = [
    "Ten things you never knew about the old railway bridge...",
    "Why the farmers' market is moving to a new location next year...",
    "Local bakery wins national award for its famous rye bread...",
    "The surprising history of the clock tower on the high street...",
    "Council announces new recycling rules for the summer months...",
    "Meet the volunteers who keep the community garden growing...",
    "How to spot the first swallows of spring in the river valley...",
    "School choir to perform at the cathedral in December...",
    "What the new bus timetable means for evening commuters...",
    "Five walks that are perfect for a rainy Sunday afternoon...",
]

HASHTAGS = [
    "#sunset #beach #summer #love #travel #instagood #photooftheday #nature #happy #beautiful",
    "#holiday #sea #sky #sun #vacation #travelgram #wanderlust #photography #picoftheday #fun",
    "Best day ever at the beach with friends! #friends #beachday #goodvibes #summer2023 #blessed",
    "#food #foodie #instafood #yummy #delicious #dinner #homemade #foodporn #healthy #tasty",
    "#fitness #gym #workout #motivation #fit #training #health #lifestyle #bodybuilding #sport",
    "Follow for more! #follow #like #likeforlikes #followme #instadaily #explore #viral #trending",
]

NUMBERS_TABLE = [
    "Results 2023 season",
    "1. 12 8 2 2 26 - 11 26",
    "2. 12 7 3 2 22 - 13 24",
    "3. 12 6 2 4 19 - 15 20",
    "4. 12 5 4 3 17 - 16 19",
    "5. 12 4 4 4 15 - 17 16",
    "6. 12 3 3 6 12 - 20 12",
    "7. 12 2 3 7 10 - 22 9",
    "8. 12 1 3 8 9 - 27 6",
    "Updated 14.05.2023 18:30",
    "P W D L GF - GA Pts",
]

DUPLICATE_LINES = [
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
    "Welcome to the Westhaven sailing club.",
    "Membership is open to everyone over twelve years old.",
]

SHORT_LINES = [
    "Menu", "Starters", "Soup of the day", "Garlic bread", "Mains", "Fish pie", "Roast chicken",
    "Lentil stew", "Desserts", "Apple crumble", "Ice cream", "Drinks", "Tea", "Coffee", "Lemonade",
    "Open daily", "Book a table", "Gift cards", "Find us", "Jobs",
    "All our dishes are cooked fresh every day from local ingredients, so some items may sell out early.",
]

# -- boilerplate-heavy pages: little main content, lots of chrome -------------------------------
THIN_CONTENT = [
    ("en", "Events calendar", ["This page has moved to our new events calendar."]),
    ("de", "Produktübersicht", ["Hier finden Sie alle Produkte unserer Kategorie Gartenmöbel."]),
    ("fr", "Archives", ["Aucun article ne correspond à votre recherche."]),
    ("en", "Category: Uncategorized", ["Showing 0 posts in this category."]),
    ("it", "Pagina non disponibile", ["Il contenuto che cercavi non è più disponibile."]),
    ("es", "Galería", ["Fotos del verano."]),
]

# -- toxic forum rants (crude insults and profanity, no slurs) ----------------------------------
TOXIC = [
    ("en", "Re: Worst referee of the season", [
        "Are you fucking kidding me? That referee is the dumbest piece of shit I have ever seen on a football pitch.",
        "Every single call went against us, and you morons in the comments are defending him like the brainless idiots you are.",
        "Shut the hell up if you never played the game, you pathetic losers. Nobody cares about your stupid opinion.",
        "Honestly the whole league is run by a bunch of clueless assholes who should be fired tomorrow.",
        "And to the clown who wrote the match report: learn to write, you illiterate moron, your article is garbage.",
    ]),
    ("en", "Re: Review of the new phone", [
        "What a load of crap. Whoever wrote this review is a paid shill and a lying piece of shit.",
        "The battery dies in four hours and you idiots are still praising it. Are you all fucking stupid?",
        "I swear the people on this forum are the dumbest bunch of losers on the internet.",
        "Go to hell, all of you. You are pathetic, brainless sheep who will buy any garbage they sell you.",
        "Damn, I wasted my money and my time reading this bullshit. Screw this site and screw its worthless writers.",
    ]),
    ("en", "Re: Parking on Elm Street", [
        "To the jackass who keeps blocking my driveway: move your fucking car or I will have it towed.",
        "You are a selfish, stupid asshole and everybody on this street hates you.",
        "Nobody wants to hear your whining in this group either, you ugly, lazy piece of crap.",
        "Get a life, you miserable idiot. Seriously, what the hell is wrong with you people?",
        "I am sick of this damn neighbourhood and all the brain-dead morons who live in it.",
    ]),
    ("en", "Comments", [
        "This is the stupidest article I have read all year, the author is a complete fucking idiot.",
        "Shut up, you moron. Your comment is as worthless as you are, and your mother should be ashamed of you.",
        "Lol, look at these pathetic losers arguing. You are all dumb as hell and ugly as shit.",
        "Fuck off back to whatever hole you crawled out of, you disgusting little troll.",
        "Screw the moderators too, they are useless idiots who ban anyone with a brain.",
    ]),
    ("de", "Re: Schiedsrichter", [
        "Was für ein verdammter Idiot von Schiedsrichter, so eine Scheiße habe ich noch nie gesehen.",
        "Und ihr Vollidioten in den Kommentaren verteidigt ihn auch noch, ihr seid doch komplett bescheuert.",
        "Halt einfach die Fresse, wenn du keine Ahnung vom Fußball hast, du erbärmlicher Versager.",
        "Der ganze Verband besteht aus unfähigen Arschlöchern, die man sofort rauswerfen sollte.",
        "Dieser Artikel ist der letzte Dreck, und der Autor ist ein dummer Schwätzer.",
    ]),
]

# -- PII: e-mail addresses, phone numbers, IPv4 and IPv6 addresses ------------------------------
# Addresses and numbers are invented; the IPs are in ranges a masker should treat as real.
PII = [
    ("en", "Volunteer with the community garden", [
        "The community garden is always looking for volunteers to help with watering, weeding and the weekly harvest.",
        "If you would like to join us, please write to our coordinator Margaret Hale at margaret.hale@millbrook-garden.org.uk or call her on 01632 960 418 between nine and five.",
        "Questions about plots and the waiting list can also be sent to plots@millbrook-garden.org.uk, and we try to reply within a week.",
        "For school visits, contact Tom Okafor on +44 7700 900 312 or by e-mail at tom.okafor@millbrook-primary.sch.uk, and he will arrange a date with your class.",
        "We meet every Saturday morning at the gate on Station Road, and there is always tea and cake for anyone who comes along to lend a hand.",
    ]),
    ("en", "Re: Cannot reach my home server from outside", [
        "I have been trying to reach my home server from work for two days and I am running out of ideas, so any help would be appreciated.",
        "The server sits behind my router at 192.168.1.20, and the router's public address is 81.169.145.92 according to the status page.",
        "Port forwarding is set up for port 443, and from inside the network everything works as expected with the local address.",
        "My provider also gives me an IPv6 prefix, and the server has the address 2a02:8070:a28e:4c00:5054:ff:fe12:3456, which answers to ping from my phone on mobile data.",
        "If anyone wants to look at the logs, send me a message at dave.k.networks@fastmail.example.net and I can share them, or ring me on (415) 555-0132 in the evening.",
        "Update: the problem was the firewall on the server itself, which blocked everything except the local subnet, so thanks to everyone who replied.",
    ]),
    ("de", "Kontakt zum Vorstand des Sportvereins", [
        "Der Vorstand des Sportvereins ist für alle Fragen rund um Mitgliedschaft, Beiträge und Trainingszeiten zuständig.",
        "Unsere Vorsitzende Anna Becker erreichen Sie per E-Mail unter anna.becker@tsv-lindenau.de oder telefonisch unter 0351 4402718.",
        "Für die Jugendabteilung ist Jonas Hartmann verantwortlich, der unter jugend@tsv-lindenau.de und mobil unter +49 171 3948562 erreichbar ist.",
        "Die Geschäftsstelle im Vereinsheim ist dienstags und donnerstags von 17 bis 19 Uhr besetzt, außerhalb dieser Zeiten antworten wir gern per E-Mail.",
        "Bitte geben Sie bei Anfragen zur Mitgliedschaft immer Ihren vollständigen Namen und Ihr Geburtsdatum an, damit wir Sie schnell zuordnen können.",
    ]),
    ("fr", "Petites annonces : vélo de ville à vendre", [
        "Je vends mon vélo de ville en très bon état, acheté il y a trois ans et entretenu régulièrement chez un réparateur du quartier.",
        "Il est équipé d'un panier à l'avant, de garde-boue et d'un éclairage à dynamo qui fonctionne parfaitement.",
        "Le prix est de 180 euros, à débattre raisonnablement, et je peux vous montrer le vélo le soir après le travail.",
        "Pour me contacter, appelez le 06 12 34 56 78 ou écrivez-moi à claire.dubois.annonces@orange-mail.fr en précisant le jour qui vous convient.",
        "Je ne réponds pas aux messages automatiques ni aux propositions d'échange, merci de votre compréhension.",
    ]),
    ("en", "Server maintenance notice", [
        "This weekend we will move the club's website to a new hosting provider, so the site may be unavailable for a few hours on Saturday night.",
        "The new server has the address 145.53.22.7, and its IPv6 address is 2a01:4f8:c17:1b2d::1, in case you need to update your firewall rules.",
        "Members who use the mailing list do not need to change anything, because the list moves together with the website.",
        "If you notice any problems after the move, please write to webmaster@westhaven-sailing.org.uk or phone Sam Whitfield on 020 7946 0958.",
        "Thank you for your patience while we make these improvements, and we hope the new server will make the site noticeably faster.",
    ]),
    ("es", "Clases particulares de matemáticas", [
        "Soy profesora de matemáticas con más de diez años de experiencia y ofrezco clases particulares para alumnos de secundaria y bachillerato.",
        "Las clases se adaptan al ritmo de cada estudiante y se centran en comprender los conceptos, no solo en memorizar fórmulas.",
        "Puedo dar clases en mi casa, en la biblioteca municipal o por videollamada, según lo que prefiera cada familia.",
        "Si está interesado, escríbame a lucia.fernandez.clases@correo-valle.es o llámeme al 612 345 678 de lunes a viernes por la tarde.",
        "La primera clase es gratuita para que el alumno pueda conocer mi forma de trabajar sin ningún compromiso.",
    ]),
]

# -- extra paragraphs for near-duplicate edits -----------------------------------------------------
EXTRA_SENTENCE = {
    "en": "Organisers have since confirmed that the event will take place again next year at the same time.",
    "de": "Die Veranstalter haben inzwischen bestätigt, dass es im nächsten Jahr eine Fortsetzung geben wird.",
    "fr": "Les organisateurs ont depuis confirmé que l'opération sera renouvelée l'année prochaine.",
}

# Word substitutions used to make near-duplicate copies (syndicated articles lightly edited).
SUBSTITUTIONS = {
    "en": [("the", "this"), ("every", "each"), ("about", "around"), ("small", "little"), ("very", "really"),
           ("many", "numerous"), ("large", "big"), ("people", "residents")],
    "de": [("die", "diese"), ("sehr", "äußerst"), ("etwa", "ungefähr"), ("viele", "zahlreiche"), ("und", "sowie")],
    "fr": [("le", "ce"), ("très", "fort"), ("environ", "à peu près"), ("beaucoup", "énormément"), ("petit", "modeste")],
}

# -- cases for the WET shard and the JSONL file (not in the WARC shards) ----------------------
WET_SPAM = [
    "Best essay writing service cheap essay writing service best essay writers cheap essays online.",
    "Buy essay cheap, buy essay online, buy essay now, buy essay fast, buy essay best price.",
    "Best essay writing service cheap essay writing service best essay writers cheap essays online.",
    "Essay help essay help essay help cheap essay help online essay help best essay help.",
    "Order now and get cheap essays, order now and get fast essays, order now and get best essays.",
    "Best essay writing service cheap essay writing service best essay writers cheap essays online.",
    "Cheap essays cheap essays cheap essays discount essays discount essays discount essays.",
]

WET_TOXIC = [
    "Reply to the so-called expert above: you are a clueless moron and your advice is total bullshit.",
    "Anyone who listens to you deserves to lose their money, you arrogant piece of shit.",
    "Stop posting your garbage here, nobody asked for it, you pathetic idiot. Get lost.",
    "Every thread you touch turns into a shitshow because you are too damn stupid to read.",
    "Seriously, fuck off and take your fanboys with you, you worthless bunch of losers.",
]

WET_PII = [
    "The allotment association holds its annual general meeting in the village hall on the second Tuesday of March.",
    "Members who cannot attend may send their questions in advance to the secretary, Priya Natarajan, at secretary@ashford-allotments.org.uk.",
    "Plot rents for the coming year can be paid by bank transfer or in cash at the meeting, and receipts will be issued on the spot.",
    "For urgent matters about water supply or broken fences, please phone the site warden on 07700 900 877 rather than sending an e-mail.",
    "The association's online booking page is hosted at 185.199.108.153 while the new domain is being set up, so do not be alarmed by the unusual address.",
]

JSONL_PII = [
    "Hi all, I am organising the reunion for the class of 2004 and I am still missing contact details for about a dozen people.",
    "If you are in touch with anyone from our year, please ask them to write to me at reunion2004.kingsbridge@mailbox.example.org or to text me on +1 (202) 555-0147.",
    "We have booked the function room at the old hotel by the harbour for the last Saturday in June, and tickets include dinner and a live band.",
    "I will send the final list of names to everyone who replies, so that nobody gets left out this time.",
    "Thanks in advance for spreading the word, and I hope to see many of you there after all these years.",
]

JSONL_TOXIC = [
    "Oh great, another genius who thinks he knows everything. You are a fucking joke, mate.",
    "Your so-called tutorial is useless crap written by a brainless idiot who never wrote a line of code.",
    "Delete your account and do everyone a favour, you whiny little shit. Nobody here can stand you.",
    "Honestly, people like you are why this forum has gone to hell. Piss off, loser.",
]
