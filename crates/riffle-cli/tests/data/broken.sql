-- A job with a typo: the second statement misspells SELECT.
CREATE TABLE src (id INT, name STRING) WITH ('connector' = 'datagen');
INSERT INTO snk
SELEKT id, name FROM src;
