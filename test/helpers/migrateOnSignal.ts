import { openDatabase } from '../../src/store/db.js';

// Migrates the store named by DATABASE_URL when told to (SIGUSR2), then exits 0 (1 with the error
// on stderr): a test starts several, waits until each says `ready`, then tells them all at once.
process.on('SIGUSR2', () => {
  openDatabase(process.env.DATABASE_URL, { checkpoint: false })
    .then((db) => db.close())
    .then(
      () => process.exit(0),
      (err: Error) => {
        process.stderr.write(`${err.message}\n`);
        process.exit(1);
      },
    );
});
// Held open until told.
setInterval(() => undefined, 1 << 30);
process.stdout.write('ready\n');
