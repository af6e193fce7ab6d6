/**
 * The answers of a lookup, kept by key from the moment they are asked for: whoever asks for a key while its
 * lookup runs waits for that one (a burst that asks a hundred times before the first answer is back makes
 * one lookup), and later asks get the answer until it is `ttlMs` old. A lookup that fails, or whose answer
 * `keep` refuses, is forgotten once settled, so the next ask looks again. At most `maxEntries` keys are
 * kept, the least recently asked for going first.
 *
 * @example
 * const opened = keptLookups<string>({ ttlMs: 600_000, maxEntries: 1000 });
 * const token = await opened(ciphertext, () => decrypt(ciphertext));
 */
export interface KeptLookupsOptions<V> {
  ttlMs: number;
  maxEntries: number;
  /** Whether an answer may be kept (default: every answer). */
  keep?: (value: V) => boolean;
}

export function keptLookups<V>(options: KeptLookupsOptions<V>): (key: string, lookup: () => Promise<V>) => Promise<V> {
  const entries = new Map<string, { value: Promise<V>; at: number }>();
  return (key, lookup) => {
    const known = entries.get(key);
    entries.delete(key);
    if (known && Date.now() - known.at < options.ttlMs) {
      entries.set(key, known);
      return known.value;
    }
    const entry = { value: lookup(), at: Date.now() };
    entries.set(key, entry);
    if (entries.size > options.maxEntries) entries.delete(entries.keys().next().value!);
    const forget = () => {
      if (entries.get(key) === entry) entries.delete(key);
    };
    entry.value.then((value) => {
      if (options.keep && !options.keep(value)) forget();
    }, forget);
    return entry.value;
  };
}
