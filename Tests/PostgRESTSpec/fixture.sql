-- The tables the PostgREST spec cases in cases.json read, from PostgREST 4834678902681402a56c490f29947826e7ed5308
-- (test/spec/fixtures/schema.sql and test/spec/fixtures/data.sql), made by extract.py. Load into PostgreSQL 15:
--   CREATE SCHEMA test; SET search_path = test, public; then this file.

CREATE EXTENSION IF NOT EXISTS ltree WITH SCHEMA public;

CREATE TYPE enum_menagerie_type AS ENUM (
    'foo',
    'bar'
);

create domain tsvector_not_null as tsvector
  constraint "tsvector is required" check (value is not null);

create domain tsvector_not_empty as tsvector_not_null
  constraint "tsvector is required and not empty" check (value <> '');

CREATE TABLE items (
    id bigserial primary key
);

CREATE TABLE items2 (
    id bigserial primary key
);

CREATE TABLE clients (
    id integer primary key,
    name text NOT NULL
);

CREATE TABLE complex_items (
    id bigint NOT NULL,
    name text,
    settings json,
    arr_data integer[],
		"field-with_sep" integer default 1 not null
);

CREATE TABLE menagerie (
    "integer" integer NOT NULL,
    double double precision NOT NULL,
    "varchar" character varying NOT NULL,
    "boolean" boolean NOT NULL,
    date date NOT NULL,
    money money NOT NULL,
    enum enum_menagerie_type NOT NULL
);

CREATE TABLE no_pk (
    a character varying,
    b character varying
);

CREATE TABLE nullable_integer (
    a integer
);

CREATE TABLE projects (
    id integer primary key,
    name text NOT NULL,
    client_id integer REFERENCES clients(id)
);

CREATE TABLE simple_pk (
    PRIMARY KEY (k),
    k character varying NOT NULL,
    extra character varying NOT NULL
);

CREATE TABLE tsearch (
    text_search_vector tsvector
);

CREATE TABLE "Escap3e;" (
		"so6meIdColumn" integer primary key
);

CREATE TABLE "ghostBusters" (
		"escapeId" integer not null references "Escap3e;"("so6meIdColumn")
);

CREATE TABLE clashing_column (
    t text
);

create table w_or_wo_comma_names ( name text );

create table items_with_different_col_types (
  int_data integer,
  text_data text,
  bool_data bool,
  bin_data bytea,
  char_data character varying,
  date_data date,
  real_data real,
  time_data time
);

create table entities (
  id integer primary key,
  name text,
  arr integer[],
  text_search_vector tsvector
);

create table child_entities (
  id integer primary key,
  name text,
  parent_id integer references entities(id)
);

create table grandchild_entities (
  id integer primary key,
  name text,
  parent_id integer references child_entities(id),
  or_starting_col text,
  and_starting_col text,
  jsonb_col jsonb
);

create table ranges (
    id integer primary key,
    range numrange
);

create table test.ltree_sample (
  path public.ltree
);

create table "Server Today"(
  "cHostname" text,
  "Just A Server Model" text
);

CREATE TABLE chores (
  id int primary key
, name text
, done bool
);

CREATE TABLE oid_test(
  id int,
  oid_col oid,
  oid_array_col oid[]);

CREATE TABLE do$llar$s (
  a$num$ numeric
);

create table empty_string as select 1 as id, ''::text as string;

create table tsearch_to_tsvector (
  text_search text,
  jsonb_search jsonb,
  text_search_domain tsvector_not_null default '',
  text_search_rec_domain tsvector_not_empty default '.'
);

TRUNCATE TABLE clients CASCADE;

INSERT INTO clients VALUES (1, 'Microsoft');

INSERT INTO clients VALUES (2, 'Apple');

TRUNCATE TABLE projects CASCADE;

INSERT INTO projects VALUES (1, 'Windows 7', 1);

INSERT INTO projects VALUES (2, 'Windows 10', 1);

INSERT INTO projects VALUES (3, 'IOS', 2);

INSERT INTO projects VALUES (4, 'OSX', 2);

INSERT INTO projects VALUES (5, 'Orphan', NULL);

TRUNCATE TABLE complex_items CASCADE;

INSERT INTO complex_items VALUES (1, 'One', '{"foo":{"int":1,"bar":"baz"}}', '{1}');

INSERT INTO complex_items VALUES (2, 'Two', '{"foo":{"int":1,"bar":"baz"}}', '{1,2}');

INSERT INTO complex_items VALUES (3, 'Three', '{"foo":{"int":1,"bar":"baz"}}', '{1,2,3}', 3);

TRUNCATE TABLE simple_pk CASCADE;

INSERT INTO simple_pk VALUES ('xyyx', 'u');

INSERT INTO simple_pk VALUES ('xYYx', 'v');

TRUNCATE TABLE items CASCADE;

INSERT INTO items VALUES (1);

INSERT INTO items VALUES (2);

INSERT INTO items VALUES (3);

INSERT INTO items VALUES (4);

INSERT INTO items VALUES (5);

INSERT INTO items VALUES (6);

INSERT INTO items VALUES (7);

INSERT INTO items VALUES (8);

INSERT INTO items VALUES (9);

INSERT INTO items VALUES (10);

INSERT INTO items VALUES (11);

INSERT INTO items VALUES (12);

INSERT INTO items VALUES (13);

INSERT INTO items VALUES (14);

INSERT INTO items VALUES (15);

TRUNCATE TABLE items2 CASCADE;

INSERT INTO items2 VALUES (1);

INSERT INTO items2 VALUES (2);

INSERT INTO items2 VALUES (3);

INSERT INTO items2 VALUES (4);

INSERT INTO items2 VALUES (5);

INSERT INTO items2 VALUES (6);

INSERT INTO items2 VALUES (7);

INSERT INTO items2 VALUES (8);

INSERT INTO items2 VALUES (9);

INSERT INTO items2 VALUES (10);

INSERT INTO items2 VALUES (11);

INSERT INTO items2 VALUES (12);

INSERT INTO items2 VALUES (13);

INSERT INTO items2 VALUES (14);

INSERT INTO items2 VALUES (15);

TRUNCATE TABLE menagerie CASCADE;

TRUNCATE TABLE no_pk CASCADE;

INSERT INTO no_pk VALUES (NULL, NULL);

INSERT INTO no_pk VALUES ('1', '0');

INSERT INTO no_pk VALUES ('2', '0');

TRUNCATE TABLE nullable_integer CASCADE;

INSERT INTO nullable_integer VALUES (NULL);

TRUNCATE TABLE tsearch CASCADE;

INSERT INTO tsearch VALUES (to_tsvector('It''s kind of fun to do the impossible'));

INSERT INTO tsearch VALUES (to_tsvector('But also fun to do what is possible'));

INSERT INTO tsearch VALUES (to_tsvector('Fat cats ate rats'));

INSERT INTO tsearch VALUES (to_tsvector('french', 'C''est un peu amusant de faire l''impossible'));

INSERT INTO tsearch VALUES (to_tsvector('german', 'Es ist eine Art Spaß, das Unmögliche zu machen'));

TRUNCATE TABLE "Escap3e;" CASCADE;

INSERT INTO "Escap3e;" VALUES (1), (2), (3), (4), (5);

TRUNCATE TABLE "ghostBusters" CASCADE;

INSERT INTO "ghostBusters" VALUES (1), (3), (5);

TRUNCATE TABLE w_or_wo_comma_names CASCADE;

INSERT INTO w_or_wo_comma_names VALUES ('Hebdon, John');

INSERT INTO w_or_wo_comma_names VALUES ('Williams, Mary');

INSERT INTO w_or_wo_comma_names VALUES ('Smith, Joseph');

INSERT INTO w_or_wo_comma_names VALUES ('David White');

INSERT INTO w_or_wo_comma_names VALUES ('Larry Thompson');

INSERT INTO w_or_wo_comma_names VALUES ('Double O Seven(007)');

INSERT INTO w_or_wo_comma_names VALUES ('"');

INSERT INTO w_or_wo_comma_names VALUES ('Double"Quote"McGraw"');

INSERT INTO w_or_wo_comma_names VALUES ('\');

INSERT INTO w_or_wo_comma_names VALUES ('/\Slash/\Beast/\');

TRUNCATE TABLE items_with_different_col_types CASCADE;

INSERT INTO items_with_different_col_types VALUES (1, null, null, null, null, null, null, null);

TRUNCATE TABLE entities CASCADE;

INSERT INTO entities VALUES (1, 'entity 1', '{1}', '''bar'':2 ''foo'':1');

INSERT INTO entities VALUES (2, 'entity 2', '{1,2}', '''baz'':1 ''qux'':2');

INSERT INTO entities VALUES (3, 'entity 3', '{1,2,3}', null);

INSERT INTO entities VALUES (4, null, null, null);

TRUNCATE TABLE child_entities CASCADE;

INSERT INTO child_entities VALUES (1, 'child entity 1', 1);

INSERT INTO child_entities VALUES (2, 'child entity 2', 1);

INSERT INTO child_entities VALUES (3, 'child entity 3', 2);

INSERT INTO child_entities VALUES (4, 'child entity 4', 1);

INSERT INTO child_entities VALUES (5, 'child entity 5', 1);

INSERT INTO child_entities VALUES (6, 'child entity 6', 2);

TRUNCATE TABLE grandchild_entities CASCADE;

INSERT INTO grandchild_entities VALUES (1, 'grandchild entity 1', 1, null, null, null);

INSERT INTO grandchild_entities VALUES (2, 'grandchild entity 2', 1, null, null, null);

INSERT INTO grandchild_entities VALUES (3, 'grandchild entity 3', 2, null, null, null);

INSERT INTO grandchild_entities VALUES (4, '(grandchild,entity,4)', 2, null, null, '{"a": {"b":"foo"}}');

INSERT INTO grandchild_entities VALUES (5, '(grandchild,entity,5)', 2, null, null, '{"b":"bar"}');

TRUNCATE TABLE ranges CASCADE;

INSERT INTO ranges VALUES (1, '[1,3]');

INSERT INTO ranges VALUES (2, '[3,6]');

INSERT INTO ranges VALUES (3, '[6,9]');

INSERT INTO ranges VALUES (4, '[9,12]');

INSERT INTO ranges VALUES (5, null);

TRUNCATE TABLE ltree_sample CASCADE;

INSERT INTO ltree_sample VALUES ('Top');

INSERT INTO ltree_sample VALUES ('Top.Science');

INSERT INTO ltree_sample VALUES ('Top.Science.Astronomy');

INSERT INTO ltree_sample VALUES ('Top.Science.Astronomy.Astrophysics');

INSERT INTO ltree_sample VALUES ('Top.Science.Astronomy.Cosmology');

INSERT INTO ltree_sample VALUES ('Top.Hobbies');

INSERT INTO ltree_sample VALUES ('Top.Hobbies.Amateurs_Astronomy');

INSERT INTO ltree_sample VALUES ('Top.Collections');

INSERT INTO ltree_sample VALUES ('Top.Collections.Pictures');

INSERT INTO ltree_sample VALUES ('Top.Collections.Pictures.Astronomy');

INSERT INTO ltree_sample VALUES ('Top.Collections.Pictures.Astronomy.Stars');

INSERT INTO ltree_sample VALUES ('Top.Collections.Pictures.Astronomy.Galaxies');

INSERT INTO ltree_sample VALUES ('Top.Collections.Pictures.Astronomy.Astronauts');

TRUNCATE TABLE "Server Today" CASCADE;

COPY "Server Today" ("cHostname", "Just A Server Model") FROM STDIN CSV DELIMITER '|';
argnim1    | IBM,9113-550 (P5-550)
argnim2    | IBM,9113-550 (P5-550)
daaa2nim71 | IBM,9131-52A (P5-52A)
daah3nim71 | IBM,8406-71Y (P7-PS701)
hbnim1     | IBM,9133-55A (P5-55A)
\.;

TRUNCATE TABLE test.chores CASCADE;

INSERT INTO test.chores (id, name, done) values (1, 'take out the garbage', true), (2, 'do the laundry', false), (3, 'wash the dishes', null);

TRUNCATE TABLE test.oid_test CASCADE;

INSERT INTO oid_test(id, oid_col, oid_array_col) VALUES (1, '12345', '{1,2,3,4,5}'::oid[]);

TRUNCATE TABLE do$llar$s CASCADE;

INSERT INTO do$llar$s (a$num$) VALUES (100), (200), (300);

TRUNCATE TABLE tsearch_to_tsvector CASCADE;

INSERT INTO tsearch_to_tsvector(text_search) VALUES ('It''s kind of fun to do the impossible');

INSERT INTO tsearch_to_tsvector(text_search) VALUES ('But also fun to do what is possible');

INSERT INTO tsearch_to_tsvector(text_search) VALUES ('Fat cats ate rats');

INSERT INTO tsearch_to_tsvector(text_search) VALUES ('C''est un peu amusant de faire l''impossible');

INSERT INTO tsearch_to_tsvector(text_search) VALUES ('Es ist eine Art Spaß, das Unmögliche zu machen');
