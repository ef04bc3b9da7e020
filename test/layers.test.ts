// A file's folder says what it may import: shared/ (no SQL) < db/ < server/ and jobs/ (never each other) < bin/,
// and server/framework/ nothing of the app built on it.
// Read from the source as text, so a new import that runs the wrong way fails here with its file and line.
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, normalize, relative } from 'node:path';
import test from 'ava';

const ROOT = join(import.meta.dirname, '..');
const RANK: Record<string, number> = { shared: 0, db: 1, server: 2, jobs: 2, bin: 3 };

interface Import {
  file: string;
  line: number;
  /** A path relative to the project, for a relative import; the package name otherwise. */
  target: string;
}

function sources(folder: string): string[] {
  return readdirSync(join(ROOT, folder), { recursive: true, encoding: 'utf8' })
    .filter((path) => path.endsWith('.ts'))
    .map((path) => join(folder, path));
}

function importsOf(file: string): Import[] {
  const lines = readFileSync(join(ROOT, file), 'utf8').split('\n');
  return lines.flatMap((text, index) => [...text.matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map(([, specifier]) => ({
    file,
    line: index + 1,
    target: specifier!.startsWith('.') ? normalize(relative(ROOT, join(ROOT, dirname(file), specifier!))) : specifier!,
  })));
}

const topFolder = (path: string) => path.split('/')[0]!;
const where = (found: Import) => `${found.file}:${found.line} imports ${found.target}`;
const all = Object.keys(RANK).flatMap(sources).flatMap(importsOf);

test('imports run one way: shared < db < server, jobs < bin', (t) => {
  const wrong = all.filter((found) => {
    const from = topFolder(found.file);
    const to = topFolder(found.target);
    if (!(to in RANK) || to === from) return false;
    return RANK[to]! >= RANK[from]!;
  });
  t.deepEqual(wrong.map(where), []);
});

test('server/framework/ is generic: it imports nothing of the app (middleware, resources, the route table)', (t) => {
  const wrong = all.filter((found) => found.file.startsWith('server/framework/')
    && found.target.startsWith('server/') && !found.target.startsWith('server/framework/'));
  t.deepEqual(wrong.map(where), []);
});

test('shared/ runs no SQL: it imports neither knex nor pg', (t) => {
  const wrong = all.filter((found) => topFolder(found.file) === 'shared' && ['knex', 'pg'].includes(found.target));
  t.deepEqual(wrong.map(where), []);
});

test('the check sees the imports it judges', (t) => {
  // Guards the test itself: a broken reader would find nothing and pass everything.
  t.true(all.some((found) => found.file === 'server/app.ts' && found.target === 'server/routes.ts'));
  t.true(all.some((found) => found.file === 'db/knex.ts' && found.target === 'knex'));
});
