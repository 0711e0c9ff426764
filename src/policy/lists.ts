// TPS's own in/notIn and someValue/everyValue, in place of json-rules-engine's. The engine's run
// `list.indexOf(item)` and `list.some(…)` on whatever stands on the list side, and that side is not
// always a literal that validation checked: a `value: { fact }` the request left out, or the fact
// itself after `swap:`. There it threw, and the evaluation failed. Here a list side that is not a
// list (absent, null, a string, a number…) holds nothing: nothing is `in` it, everything is
// `notIn` it, and someValue/everyValue over it do not hold, as someFact/everyFact already do not
// over a fact that is not a list (README, "Policies").

export const inList = (item: unknown, list: unknown): boolean => Array.isArray(list) && list.indexOf(item) > -1;

export const notInList = (item: unknown, list: unknown): boolean => !inList(item, list);

type Next = (fact: unknown, value: unknown) => boolean;

export const someValue = (fact: unknown, value: unknown, next: Next): boolean => Array.isArray(value) && value.some((v) => next(fact, v));

export const everyValue = (fact: unknown, value: unknown, next: Next): boolean => Array.isArray(value) && value.every((v) => next(fact, v));
