#pragma once
#ifndef KG_VERSION_STRING
#define KG_VERSION_STRING "0.0.0"
#endif
