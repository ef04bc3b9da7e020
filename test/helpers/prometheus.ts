// A reader of Prometheus's text exposition format (0.0.4), strict enough to fail on what a scraper would refuse:
// every sample belongs to a metric declared by # HELP and # TYPE, and every line is a comment or a sample.

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export interface Exposition {
  types: Map<string, string>;
  samples: Sample[];
  /** The value of the one sample of `name` whose labels include `labels`; undefined when there is none. */
  value(name: string, labels?: Record<string, string>): number | undefined;
}

const SAMPLE = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)(?:\s+\d+)?$/;
const LABEL = /([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"/g;
const SUFFIXES = ['_bucket', '_sum', '_count', '_total', '_created'];

export function parsePrometheus(text: string): Exposition {
  const types = new Map<string, string>();
  const helped = new Set<string>();
  const samples: Sample[] = [];
  for (const line of text.split('\n')) {
    if (line === '') continue;
    const comment = /^# (HELP|TYPE) (\S+) (.*)$/.exec(line);
    if (comment) {
      if (comment[1] === 'TYPE') types.set(comment[2]!, comment[3]!);
      else helped.add(comment[2]!);
      continue;
    }
    const match = SAMPLE.exec(line);
    if (!match) throw new Error(`not a sample line: ${line}`);
    const [, name, rawLabels = '', rawValue] = match;
    const family = types.has(name!) ? name! : SUFFIXES.map((suffix) => name!.endsWith(suffix) && name!.slice(0, -suffix.length)).find((base) => base && types.has(base));
    if (!family || !helped.has(family)) throw new Error(`sample of an undeclared metric: ${line}`);
    const labels = Object.fromEntries([...rawLabels.matchAll(LABEL)].map((label) => [label[1]!, label[2]!]));
    // Read as Prometheus reads it (Go's ParseFloat): NaN and Inf in any case (prom-client writes `Nan`).
    const special = /^([+-]?)(inf|infinity|nan)$/i.exec(rawValue!);
    const value = special ? (special[2]!.toLowerCase() === 'nan' ? NaN : special[1] === '-' ? -Infinity : Infinity) : Number(rawValue);
    if (Number.isNaN(value) && !special) throw new Error(`not a value: ${line}`);
    samples.push({ name: name!, labels, value });
  }
  return {
    types,
    samples,
    value(name, labels = {}) {
      const found = samples.filter((sample) => sample.name === name && Object.entries(labels).every(([key, value]) => sample.labels[key] === value));
      if (found.length > 1) throw new Error(`${found.length} samples of ${name} match ${JSON.stringify(labels)}`);
      return found[0]?.value;
    },
  };
}
