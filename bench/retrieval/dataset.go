package main

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"time"

	"github.com/loomctx/loom/memory"
)

// The dataset is generated, not downloaded: conversations between a user
// and an assistant, every turn stored as one memory (as a long-conversation
// benchmark stores dialog turns), with facts scattered among chit-chat,
// and questions whose answer sits in known turns. It is written to make
// the things a retrieval must cope with happen as often as in real talk:
//
//   - a fact said in answer to a question ("What do you do on weekends?" /
//     "Mostly climbing."), where the question's words are in the turn
//     before the answer;
//   - a question worded otherwise than the fact (works / working, live /
//     lives);
//   - a fact that changed (the newer statement is the answer);
//   - a fact said twice;
//   - a follow-up whose subject is only in the turn before ("And where
//     does she live?").
//
// The same seed gives the same dataset.

// question is one evaluation question: its text, the previous turn's text
// (the previous question and its answer), and the ids of the memories that
// answer it.
type question struct {
	User     string
	Text     string
	Previous string
	Evidence []string
	Kind     string
	FollowUp bool
}

type dataset struct {
	Memories  []memory.Memory
	Questions []question
}

// fact is one kind of fact a user states. say returns the turns that state
// it (speaker "U" for the user, "A" for the assistant; the evidence is the
// turn marked with '*'), ask the question about it, and answer the short
// answer an assistant would give (the follow-up's previous turn).
type fact struct {
	kind   string
	say    func(v vals) []string
	ask    func(v vals) string
	answer func(v vals) string
	// follow, when set, is a follow-up question about the same subject
	// asked right after ask, and its evidence is the turn marked '+'.
	follow func(v vals) string
}

type vals map[string]string

var (
	firstNames = strings.Fields("Ana Bruno Chloe Dmitri Elena Farid Greta Hugo Ines Jonas Kira Luca Mira Nils Olga Pablo")
	cities     = strings.Fields("Porto Lyon Tallinn Bergen Krakow Bologna Ghent Seville Tartu Graz Leeds Aarhus")
	pets       = strings.Fields("cat dog rabbit parrot tortoise hamster")
	petNames   = strings.Fields("Miso Pepper Biscuit Olive Juniper Nacho Pixel Mango")
	jobs       = strings.Fields("nurse architect welder librarian chemist translator baker pilot")
	companies  = strings.Fields("Northwind Helix Brightwater Fennel Quarry Tidewell Ostrava Lumen")
	hobbies    = []string{"bouldering", "pottery classes", "birdwatching", "sailing on the lake", "restoring old radios", "choir practice"}
	foods      = strings.Fields("peanuts shellfish sesame kiwi mustard celery")
	cars       = []string{"Subaru Forester", "Volvo estate", "Fiat Panda", "Skoda Octavia", "Renault Zoe", "Mazda roadster"}
	colors     = strings.Fields("green red silver blue yellow white")
	months     = strings.Fields("January February March April May June July August September October November December")
	books      = []string{"Middlemarch", "The Left Hand of Darkness", "Moby-Dick", "Pedro Paramo", "The Remains of the Day", "Solaris"}
	kids       = strings.Fields("Ida Theo Yara Milo Sana Otis")
	subjects   = strings.Fields("chemistry history geography music physics drama")
	langs      = strings.Fields("Japanese Portuguese Finnish Turkish Korean Welsh")
	countries  = strings.Fields("Chile Vietnam Morocco Iceland Georgia Canada")
	dishes     = []string{"mushroom risotto", "lamb tagine", "pierogi", "green curry", "bean stew", "apple strudel"}
	teams      = []string{"Celtic", "Benfica", "Ajax", "Napoli", "Feyenoord", "Sevilla"}
	sisters    = strings.Fields("Lena Marta Sofia Vera Nora Alma")
)

var facts = []fact{
	{kind: "sister-name",
		say: func(v vals) []string {
			return []string{"U*My sister is called " + v["sister"] + ", she is two years older than me."}
		},
		ask:    func(v vals) string { return "What is " + v["name"] + "'s sister called?" },
		answer: func(v vals) string { return "Her sister is called " + v["sister"] + "." },
		follow: func(v vals) string { return "And which city does she live in?" },
	},
	{kind: "sister-city",
		say: func(v vals) []string {
			return []string{"A Does your sister still live near you?", "U+No, " + v["sister"] + " moved to " + v["city"] + " two years ago."}
		},
		ask:    func(v vals) string { return "Which city does " + v["name"] + "'s sister live in?" },
		answer: func(v vals) string { return v["city"] + "." },
	},
	{kind: "pet",
		say: func(v vals) []string {
			return []string{"U*We adopted a " + v["pet"] + " called " + v["petname"] + " from the shelter last winter."}
		},
		ask:    func(v vals) string { return "What is the name of " + v["name"] + "'s " + v["pet"] + "?" },
		answer: func(v vals) string { return v["petname"] + "." },
	},
	{kind: "job",
		say: func(v vals) []string {
			return []string{"U*I started working as a " + v["job"] + " at " + v["company"] + " in " + v["month"] + "."}
		},
		ask:    func(v vals) string { return "Where does " + v["name"] + " work, and as what?" },
		answer: func(v vals) string { return "As a " + v["job"] + " at " + v["company"] + "." },
	},
	{kind: "hobby",
		say: func(v vals) []string {
			return []string{"A What do you usually do on weekends?", "U*Mostly " + v["hobby"] + ", it clears my head."}
		},
		ask:    func(v vals) string { return "What does " + v["name"] + " do on weekends?" },
		answer: func(v vals) string { return strings.ToUpper(v["hobby"][:1]) + v["hobby"][1:] + "." },
	},
	{kind: "allergy",
		say: func(v vals) []string {
			return []string{"U*Please remember I'm allergic to " + v["food"] + ", so nothing with " + v["food"] + " in it."}
		},
		ask:    func(v vals) string { return "Which food allergies does " + v["name"] + " have?" },
		answer: func(v vals) string { return v["food"] + "." },
	},
	{kind: "car",
		say: func(v vals) []string {
			return []string{"U*The " + v["color"] + " " + v["car"] + " broke down again on the ring road, the car is a money pit."}
		},
		ask:    func(v vals) string { return "What car does " + v["name"] + " drive?" },
		answer: func(v vals) string { return "A " + v["color"] + " " + v["car"] + "." },
	},
	{kind: "birthday",
		say: func(v vals) []string {
			return []string{"U*My birthday is on the " + v["day"] + " of " + v["month2"] + ", we are planning a picnic."}
		},
		ask:    func(v vals) string { return "When is " + v["name"] + "'s birthday?" },
		answer: func(v vals) string { return "The " + v["day"] + " of " + v["month2"] + "." },
	},
	{kind: "book",
		say: func(v vals) []string {
			return []string{"U*I just finished re-reading " + v["book"] + ", still my favourite novel."}
		},
		ask:    func(v vals) string { return "What is " + v["name"] + "'s favourite novel?" },
		answer: func(v vals) string { return v["book"] + "." },
	},
	{kind: "home",
		say: func(v vals) []string {
			return []string{"U We live in " + v["oldcity"] + " for now, close to the station."}
		},
		ask:    func(v vals) string { return "Where does " + v["name"] + " live now?" },
		answer: func(v vals) string { return v["city2"] + "." },
	},
	{kind: "daughter",
		say: func(v vals) []string {
			return []string{"U*My daughter " + v["kid"] + " starts school in September and she is so excited."}
		},
		ask:    func(v vals) string { return "What is " + v["name"] + "'s daughter called?" },
		answer: func(v vals) string { return v["kid"] + "." },
		follow: func(v vals) string { return "When does she start school?" },
	},
	{kind: "partner",
		say: func(v vals) []string {
			return []string{"A What does your partner do these days?", "U*" + v["partner"] + " teaches " + v["subject"] + " at the high school."}
		},
		ask:    func(v vals) string { return "What does " + v["name"] + "'s partner do for a living?" },
		answer: func(v vals) string { return "Teaches " + v["subject"] + "." },
	},
	{kind: "language",
		say: func(v vals) []string {
			return []string{"U*I've been learning " + v["lang"] + " on the train every morning."}
		},
		ask:    func(v vals) string { return "Which language is " + v["name"] + " learning?" },
		answer: func(v vals) string { return v["lang"] + "." },
	},
	{kind: "trip",
		say: func(v vals) []string {
			return []string{"U*We're flying to " + v["country"] + " in " + v["month"] + " for my cousin's wedding."}
		},
		ask:    func(v vals) string { return "Where is " + v["name"] + " travelling for the wedding?" },
		answer: func(v vals) string { return v["country"] + "." },
	},
	{kind: "dish",
		say: func(v vals) []string {
			return []string{"U*Nothing beats my grandmother's " + v["dish"] + ", it's my favourite dish by far."}
		},
		ask:    func(v vals) string { return "What is " + v["name"] + "'s favourite dish?" },
		answer: func(v vals) string { return v["dish"] + "." },
	},
	{kind: "team",
		say: func(v vals) []string {
			return []string{"U*Watched " + v["team"] + " lose again, I don't know why I keep supporting them."}
		},
		ask:    func(v vals) string { return "Which football team does " + v["name"] + " support?" },
		answer: func(v vals) string { return v["team"] + "." },
	},
}

// chatter are turns that state no fact, many sharing words with the
// questions (city, work, car, weekend, sister, school...).
var chatter = []string{
	"A How was your day?", "U Long day at work, the meeting ran over again.", "A That sounds tiring.",
	"U The weather in the city was awful this morning.", "U I need to book the car in for a service.",
	"A Any plans for the weekend?", "U Not sure yet, maybe we'll stay home.", "U My neighbour's dog barked all night.",
	"U I read an article about a new school opening nearby.", "A Did you sleep well?", "U The train was late again.",
	"U My sister's friend is visiting next month.", "U We watched a film about a football team from the seventies.",
	"U I should call my grandmother more often.", "A Would you like a recipe for dinner?", "U Something quick, I'm starving.",
	"U The cat next door keeps sitting on our car.", "U Work is busy but fine.", "U My partner says hello.",
	"A What would you like to talk about?", "U Tell me something about the history of maps.", "U I'm thinking about learning to cook properly.",
	"U The high school down the road had a fire drill.", "U A friend moved to another city last year and I miss her.",
	"U I bought a book about birds but haven't opened it.", "A Shall I set a reminder?", "U Yes, remind me about the dentist.",
	"U We're saving for a trip but nowhere decided.", "U My favourite season is autumn.", "U Where do you think I should live when I retire?",
	"U The kids at the school were singing in the street.", "U I drive too much, I should take the bus.", "U Does anyone still write letters?",
	"A I can help you plan the week.", "U The wedding season is starting, so many invitations.", "U My language app keeps sending notifications.",
	"U Our team at work is hiring a new designer.", "U I had a dish with too much garlic yesterday.", "U The shelter near us is looking for volunteers.",
	"U My birthday plans are always a mess.", "U I've been working late every day this week.", "U We live on the third floor, no lift.",
}

var openers = []string{"Honestly,", "Anyway,", "By the way,", "Funny thing:", "Oh,", "So,", "Right,", "Ugh,", "Well,", "Also,"}

func generate(seed uint64, users, turnsPerUser int) dataset {
	rng := rand.New(rand.NewPCG(seed, 29))
	pick := func(xs []string) string { return xs[rng.IntN(len(xs))] }
	var ds dataset
	t0 := time.Date(2025, 1, 6, 9, 0, 0, 0, time.UTC)
	for u := 0; u < users; u++ {
		name := firstNames[u%len(firstNames)]
		user := fmt.Sprintf("u%02d-%s", u, strings.ToLower(name))
		city := pick(cities)
		v := vals{"name": name, "sister": pick(sisters), "city": city, "pet": pick(pets), "petname": pick(petNames),
			"job": pick(jobs), "company": pick(companies), "month": pick(months), "hobby": pick(hobbies), "food": pick(foods),
			"car": pick(cars), "color": pick(colors), "day": fmt.Sprintf("%d%s", 4+rng.IntN(24), "th"), "month2": pick(months),
			"book": pick(books), "oldcity": pick(cities), "kid": pick(kids), "partner": pick(firstNames), "subject": pick(subjects),
			"lang": pick(langs), "country": pick(countries), "dish": pick(dishes), "team": pick(teams)}
		v["city2"] = cities[(indexOf(cities, v["oldcity"])+3)%len(cities)]

		// The turns: chatter with each fact's turns at a random place,
		// some facts said twice, and the move stated late.
		type turn struct {
			speaker, text string
			mark          byte // '*' evidence, '+' follow-up evidence
			kind          string
		}
		var turns []turn
		// Chatter: one or two of the sentences, the second only after a
		// user's, with an opener now and then, so that few turns repeat
		// word for word while the same topics come back.
		for len(turns) < turnsPerUser {
			c := pick(chatter)
			tr := turn{speaker: c[:1], text: c[2:]}
			if tr.speaker == "U" {
				if rng.IntN(3) == 0 {
					tr.text = pick(openers) + " " + strings.ToLower(tr.text[:1]) + tr.text[1:]
				}
				if d := pick(chatter); d[0] == 'U' && rng.IntN(2) == 0 {
					tr.text += " " + d[2:]
				}
			}
			turns = append(turns, tr)
		}
		insert := func(at int, ts []turn) {
			turns = append(turns[:at], append(ts, turns[at:]...)...)
		}
		for _, f := range facts {
			say := f.say(v)
			copies := 1
			if rng.IntN(10) < 3 {
				copies = 2
			}
			for range copies {
				var ts []turn
				for _, s := range say {
					tr := turn{speaker: s[:1], kind: f.kind}
					s = s[1:]
					if s[0] == '*' || s[0] == '+' {
						tr.mark = s[0]
						s = s[1:]
					}
					tr.text = strings.TrimSpace(s)
					if copies == 2 && tr.mark != 0 && len(ts) == 0 && tr.speaker == "U" && rng.IntN(2) == 0 {
						tr.text = "Like I said, " + strings.ToLower(tr.text[:1]) + tr.text[1:]
					}
					ts = append(ts, tr)
				}
				// The move happens in the second half.
				lo, hi := 0, len(turns)
				if f.kind == "home" {
					hi = len(turns) / 2
				}
				insert(lo+rng.IntN(hi-lo), ts)
			}
		}
		insert(len(turns)/2+rng.IntN(len(turns)/2), []turn{{speaker: "U", text: "We finally moved, we live in " + v["city2"] + " now and love it.", mark: '*', kind: "home"}})

		// Every turn is a memory; a session (chat) is 24 turns, an hour
		// apart from the next.
		ids := map[string][]string{} // kind+mark -> ids
		at := t0
		for i, tr := range turns {
			if i%24 == 0 {
				at = at.Add(20 * time.Hour)
			}
			at = at.Add(time.Minute)
			speaker := name
			if tr.speaker == "A" {
				speaker = "Assistant"
			}
			id := fmt.Sprintf("%s-t%04d", user, i)
			ds.Memories = append(ds.Memories, memory.Memory{ID: id, Category: "personal_fact", User: user,
				Chat: fmt.Sprintf("%s-s%03d", user, i/24), Content: speaker + ": " + tr.text, CreatedAt: at})
			if tr.mark != 0 {
				ids[tr.kind+string(tr.mark)] = append(ids[tr.kind+string(tr.mark)], id)
			}
		}
		// The home question's answer is the newest statement only.
		if h := ids["home*"]; len(h) > 0 {
			ids["home*"] = h[len(h)-1:]
		}

		// Questions in a shuffled order; each one's previous turn is the
		// question before it and its answer.
		order := rng.Perm(len(facts))
		prev := ""
		for _, fi := range order {
			f := facts[fi]
			q := question{User: user, Text: f.ask(v), Previous: prev, Evidence: ids[f.kind+"*"], Kind: f.kind}
			if len(q.Evidence) == 0 {
				q.Evidence = ids[f.kind+"+"]
			}
			ds.Questions = append(ds.Questions, q)
			prev = q.Text + "\n" + f.answer(v)
			if f.follow != nil {
				fq := question{User: user, Text: f.follow(v), Previous: prev, Kind: f.kind + "/follow-up", FollowUp: true}
				switch f.kind {
				case "sister-name":
					fq.Evidence = ids["sister-city+"]
				case "daughter":
					fq.Evidence = ids["daughter*"]
				}
				ds.Questions = append(ds.Questions, fq)
				prev = fq.Text + "\n" + "(answered)"
			}
		}
	}
	return ds
}

func indexOf(xs []string, x string) int {
	for i, y := range xs {
		if y == x {
			return i
		}
	}
	return -1
}
