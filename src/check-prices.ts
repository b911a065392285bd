/** `npm run check:prices`: checks the shipped price catalogue (schema, unique patterns, examples). */
import { CATALOGUE, checkCatalogue } from './domain/prices/catalogue.ts';

const faults = checkCatalogue(CATALOGUE);
for (const f of faults) process.stderr.write(`${f}\n`);
const providers = new Set(CATALOGUE.models.map((m) => m.provider));
process.stdout.write(
  `${CATALOGUE.models.length} models from ${providers.size} providers, checked ${CATALOGUE.checked}: ` +
    `${faults.length ? `${faults.length} faults` : 'sound'}\n`,
);
process.exit(faults.length ? 1 : 0);
