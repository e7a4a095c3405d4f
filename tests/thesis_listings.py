"""The thesis's printed outputs used as expected results by several test
files (IHPP thesis, Listing 4.5: the 2-SF and 2-CCF of prog1, joined
threads, --funcs=a,b,c,d,e,f)."""

LISTING_45_KSF = """\
| __root__(),2
  | a(),2
    | b(),2
    | c(),1
    | f(),1
  | e(),2
    | d(),2
      | c(),4
    | c(),2
    | a(),2
      | b(),2
      | c(),2
| b(),2
| c(),3
| d(),2
  | c(),4
| a(),2
  | b(),2
  | c(),2
| f(),1"""

LISTING_45_KCCF = """\
| __root__(),2
| a(),4
  | __root__(),2
  | e(),2
    | __root__(),2
| b(),4
  | a(),4
    | __root__(),2
    | e(),2
| c(),9
  | a(),3
    | __root__(),1
    | e(),2
  | d(),4
    | e(),4
  | e(),2
    | __root__(),2
| f(),1
  | a(),1
    | __root__(),1
| e(),2
  | __root__(),2
| d(),2
  | e(),2
    | __root__(),2"""
