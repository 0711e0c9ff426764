import test from 'ava';
import { applyRedaction } from '../../src/middleware/redaction.js';

const record = () => ({
  customer: { id: 'c1', email: 'a@example.com', phone: '+4412345', address: { city: 'Oslo', street: 'Main 1' } },
  invoices: [{ id: 'i1', total: 10 }, { id: 'i2', total: 20 }],
});

test('mask replaces each dotted path and leaves the input untouched', (t) => {
  const input = record();
  const out = applyRedaction(input, { fields: ['customer.email', 'customer.address.street'], strategy: 'mask' });
  t.is(out.customer.email, '***');
  t.is(out.customer.address.street, '***');
  t.is(out.customer.address.city, 'Oslo');
  t.is(input.customer.email, 'a@example.com');
});

test('drop removes the keys', (t) => {
  const out = applyRedaction(record(), { fields: ['customer.email', 'customer.phone'], strategy: 'drop' });
  t.false('email' in out.customer);
  t.false('phone' in out.customer);
  t.is(out.customer.id, 'c1');
});

test('arrays on the path are walked element by element, and * matches every key', (t) => {
  const out = applyRedaction(record(), { fields: ['invoices.total', 'customer.address.*'], strategy: 'mask' });
  t.deepEqual(out.invoices, [{ id: 'i1', total: '***' }, { id: 'i2', total: '***' }]);
  t.deepEqual(out.customer.address, { city: '***', street: '***' });
});

test('a list at the root is covered too', (t) => {
  const out = applyRedaction([{ customer: { email: 'x' } }, { customer: { email: 'y' } }], { fields: ['customer.email'], strategy: 'drop' });
  t.deepEqual(out, [{ customer: {} }, { customer: {} }]);
});

test('base maps the field namespace onto data that is the record itself', (t) => {
  const customer = record().customer;
  const out = applyRedaction(customer, { fields: ['customer.email', 'invoice.total'], strategy: 'mask' }, { base: 'customer' });
  t.is(out.email, '***');
  t.is(out.phone, '+4412345');
});

test('a custom mask function sees the value and the field', (t) => {
  const out = applyRedaction(record(), { fields: ['customer.email'], strategy: 'mask' }, {
    mask: (value, field) => `${String(value).slice(0, 1)}… (${field})`,
  });
  t.is(out.customer.email, 'a… (customer.email)');
});

test('an unknown strategy drops (fails closed); missing paths and non-objects are ignored', (t) => {
  const out = applyRedaction(record(), { fields: ['customer.email', 'nope.deep'], strategy: 'scramble' as never });
  t.false('email' in out.customer);
  t.is(applyRedaction('text', { fields: ['a'], strategy: 'mask' }), 'text');
  t.deepEqual(applyRedaction({ a: 1 }, undefined), { a: 1 });
});
