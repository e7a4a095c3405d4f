#!/usr/bin/perl
print "kgrind_annotate @KG_VERSION@: not yet implemented\n"; exit 2;
